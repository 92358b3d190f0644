//! A small deterministic PRNG (xorshift64) so a failing random test replays from its seed. Test
//! files add the value generators they need in their own `impl Rng` blocks.

pub struct Rng(pub u64);

impl Rng {
    /// A generator for `seed`, any value (zero included) giving a usable state.
    pub fn seeded(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

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

    /// True `pct` times in 100.
    pub fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct as i64
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}
