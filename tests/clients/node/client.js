// node-postgres (pg) against duckmv: text queries, prepared (named)
// queries, a transaction, a materialized view refreshed and read back, and
// LISTEN / NOTIFY (refresh notifications included).
// Usage: node client.js HOST PORT. Prints `ok:` per check; exits 1 on a
// mismatch.
const assert = require('node:assert/strict');
const { Client } = require('pg');

let checks = 0;
function check(what, got, want) {
  try {
    assert.deepStrictEqual(got, want);
  } catch (e) {
    console.log(`FAIL: ${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
    process.exit(1);
  }
  checks++;
  console.log(`ok: ${what}`);
}

async function main() {
  const [host, port] = process.argv.slice(2);
  const c = new Client({ host, port: Number(port), user: 'test', database: 'test' });
  await c.connect();
  console.log(`pg ${require('pg/package.json').version}`);
  await c.query('DROP MATERIALIZED VIEW IF EXISTS n_hits');
  await c.query('DROP TABLE IF EXISTS n_visits');
  await c.query('CREATE TABLE n_visits (id integer PRIMARY KEY, page text, ms integer)');
  await c.query('CREATE MATERIALIZED VIEW n_hits AS SELECT page, count(*) AS hits, max(ms) AS slowest FROM n_visits GROUP BY page');
  // Text (simple protocol) query.
  const ins = await c.query("INSERT INTO n_visits VALUES (1, '/', 10), (2, '/a', 30)");
  check('simple insert row count', ins.rowCount, 2);
  // Parameterised and named prepared queries (extended protocol).
  for (let i = 3; i <= 6; i++) {
    await c.query({ name: 'ins-visit', text: 'INSERT INTO n_visits VALUES ($1, $2, $3)', values: [i, i % 2 ? '/' : '/a', i * 5] });
  }
  const r = await c.query({ name: 'by-page', text: 'SELECT id, ms FROM n_visits WHERE page = $1 ORDER BY id', values: ['/a'] });
  check('named prepared query', r.rows, [{ id: 2, ms: 30 }, { id: 4, ms: 20 }, { id: 6, ms: 30 }]);
  check('field types', r.fields.map((f) => f.dataTypeID), [23, 23]);
  await c.query('BEGIN');
  await c.query("INSERT INTO n_visits VALUES (99, '/x', 1)");
  await c.query('ROLLBACK');
  const n = await c.query('SELECT count(*)::int AS n FROM n_visits');
  check('rollback', n.rows[0].n, 6);
  await c.query('REFRESH MATERIALIZED VIEW n_hits');
  const mv = await c.query('SELECT page, hits::int AS hits, slowest FROM n_hits ORDER BY page');
  check('materialized view after refresh', mv.rows, [{ page: '/', hits: 3, slowest: 25 }, { page: '/a', hits: 3, slowest: 30 }]);
  const v = await c.query('SELECT version() AS v');
  check('version() names PostgreSQL', /^PostgreSQL \d+/.test(v.rows[0].v), true);
  const kinds = await c.query("SELECT relname, relkind FROM pg_class WHERE relname IN ('n_visits', 'n_hits') ORDER BY relname");
  check('pg_class kinds', kinds.rows, [{ relname: 'n_hits', relkind: 'm' }, { relname: 'n_visits', relkind: 'r' }]);
  // LISTEN / NOTIFY: another client gets them as `notification` events while idle.
  const l = new Client({ host, port: Number(port), user: 'test', database: 'test' });
  await l.connect();
  const notes = [];
  let wake = () => {};
  l.on('notification', (n) => {
    notes.push({ channel: n.channel, payload: n.payload, pid: n.processId });
    wake();
  });
  // Resolves once `count` notifications came, or after `ms` with what came.
  const received = (count, ms) =>
    new Promise((resolve) => {
      const finish = () => {
        wake = () => {};
        resolve(notes.splice(0, notes.length));
      };
      const timer = setTimeout(finish, ms);
      wake = () => {
        if (notes.length >= count) {
          clearTimeout(timer);
          finish();
        }
      };
      wake();
    });
  await l.query('LISTEN n_events');
  await l.query('LISTEN duckmv_refresh');
  await l.query('LISTEN "duckmv_refresh.n_hits"');
  const pid = c.processID;
  await c.query("NOTIFY n_events, 'hello from node'");
  check('NOTIFY reaches another client', await received(1, 10000), [{ channel: 'n_events', payload: 'hello from node', pid }]);
  await c.query("INSERT INTO n_visits VALUES (7, '/new', 1)");
  await c.query('REFRESH MATERIALIZED VIEW n_hits');
  const payload = '{"view":"n_hits","rows":1}';
  const got = (await received(2, 10000)).sort((a, b) => a.channel.localeCompare(b.channel));
  check('REFRESH notifies duckmv_refresh and duckmv_refresh.<view>', got, [
    { channel: 'duckmv_refresh', payload, pid },
    { channel: 'duckmv_refresh.n_hits', payload, pid },
  ]);
  await c.query('REFRESH MATERIALIZED VIEW n_hits');
  check('REFRESH with nothing pending notifies nobody', await received(1, 500), []);
  await l.end();
  await c.end();
  console.log(`all ${checks} checks passed`);
}

main().catch((e) => {
  console.log(`FAIL: ${e.message}`);
  process.exit(1);
});
