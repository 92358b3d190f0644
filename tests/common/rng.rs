//! A small deterministic PRNG (xorshift64) so a failing random test replays from its seed. Test
//! files add the value generators they need in their own `impl Rng` blocks.

pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value in `0..n`.
    pub fn below(&mut self, n: u64) -> i64 {
        (self.next() % n) as i64
    }
}
