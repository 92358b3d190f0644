// pgJDBC against duckmv, run with Java's single-file launcher:
//   java -cp /usr/share/java/postgresql.jar JdbcClient.java HOST PORT
// Statement and PreparedStatement past the prepare threshold (binary
// transfer), batch inserts, autocommit off, a materialized view refreshed and
// read back, DatabaseMetaData, and LISTEN / NOTIFY (refresh notifications
// included). Prints `ok:` per check; exits 1 on a mismatch.
import java.math.BigDecimal;
import java.sql.*;
import java.util.*;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

public class JdbcClient {
    static int checks = 0;

    static void check(String what, Object got, Object want) {
        if (!Objects.equals(got, want)) {
            System.out.println("FAIL: " + what + ": got " + got + ", want " + want);
            System.exit(1);
        }
        checks++;
        System.out.println("ok: " + what);
    }

    static final String SUMS_Q = "SELECT owner, sum(balance) AS total, count(*) AS n FROM j_acct GROUP BY owner";

    /** Rows where the view and its query, run fresh, differ as bags. */
    static long viewDiff(Connection c, String view, String query) throws SQLException {
        String sql = "SELECT count(*) FROM ((SELECT * FROM " + view + " EXCEPT ALL (" + query + ")) UNION ALL (("
                + query + ") EXCEPT ALL SELECT * FROM " + view + ")) AS diff";
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    static List<String> column(ResultSet rs, String name) throws SQLException {
        List<String> out = new ArrayList<>();
        while (rs.next()) out.add(rs.getString(name));
        rs.close();
        return out;
    }

    /**
     * Up to `want` notifications, as "channel payload pid", waiting at most `ms` in all:
     * getNotifications(timeout) waits on the socket while the connection is idle.
     */
    static List<String> notes(PGConnection c, int want, long ms) throws SQLException {
        List<String> out = new ArrayList<>();
        long deadline = System.currentTimeMillis() + ms;
        while (out.size() < want || want == 0) {
            long left = deadline - System.currentTimeMillis();
            if (left <= 0) break;
            PGNotification[] got = c.getNotifications((int) left);
            if (got != null) {
                for (PGNotification n : got) out.add(n.getName() + " " + n.getParameter() + " " + n.getPID());
            }
            if (want == 0) break;
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://" + args[0] + ":" + args[1] + "/test?user=test&prepareThreshold=2";
        try (Connection c = DriverManager.getConnection(url)) {
            DatabaseMetaData md = c.getMetaData();
            System.out.println("pgJDBC " + md.getDriverVersion() + ", server " + md.getDatabaseProductVersion());
            try (Statement s = c.createStatement()) {
                s.execute("DROP MATERIALIZED VIEW IF EXISTS j_sums");
                s.execute("DROP TABLE IF EXISTS j_acct");
                s.execute("CREATE TABLE j_acct (id integer PRIMARY KEY, owner varchar NOT NULL, balance numeric(12,2), opened date)");
                s.execute("CREATE MATERIALIZED VIEW j_sums AS " + SUMS_Q);
            }
            // Batch insert through a PreparedStatement.
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO j_acct VALUES (?, ?, ?, ?)")) {
                for (int i = 1; i <= 6; i++) {
                    ps.setInt(1, i);
                    ps.setString(2, i % 2 == 0 ? "even" : "odd");
                    ps.setBigDecimal(3, new BigDecimal(i + ".50"));
                    ps.setDate(4, java.sql.Date.valueOf("2024-03-0" + i));
                    ps.addBatch();
                }
                int[] counts = ps.executeBatch();
                check("batch insert", counts.length, 6);
            }
            // Past prepareThreshold=2 the driver switches to a named server
            // statement and binary transfer.
            try (PreparedStatement ps = c.prepareStatement("SELECT owner, balance, opened FROM j_acct WHERE id = ?")) {
                for (int round = 0; round < 5; round++) {
                    ps.setInt(1, 3);
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        check("prepared select round " + round,
                              rs.getString(1) + " " + rs.getBigDecimal(2) + " " + rs.getDate(3),
                              "odd 3.50 2024-03-03");
                    }
                }
            }
            // Autocommit off: rollback then commit.
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.executeUpdate("INSERT INTO j_acct VALUES (100, 'odd', 1, NULL)");
                c.rollback();
                s.executeUpdate("INSERT INTO j_acct VALUES (7, 'odd', 10, NULL)");
                c.commit();
            }
            c.setAutoCommit(true);
            try (Statement s = c.createStatement()) {
                try (ResultSet rs = s.executeQuery("SELECT count(*) FROM j_acct")) {
                    rs.next();
                    check("autocommit off: rollback and commit", rs.getLong(1), 7L);
                }
                s.execute("REFRESH MATERIALIZED VIEW j_sums");
                List<String> rows = new ArrayList<>();
                try (ResultSet rs = s.executeQuery("SELECT owner, total, n FROM j_sums ORDER BY owner")) {
                    while (rs.next()) rows.add(rs.getString(1) + " " + rs.getBigDecimal(2) + " " + rs.getLong(3));
                }
                check("materialized view after refresh", rows, List.of("even 13.50 3", "odd 20.50 4"));
            }
            // Updates and deletes through prepared statements, refreshed.
            try (PreparedStatement up = c.prepareStatement("UPDATE j_acct SET balance = balance * ? WHERE owner = ?");
                 PreparedStatement del = c.prepareStatement("DELETE FROM j_acct WHERE id = ?");
                 Statement s = c.createStatement()) {
                up.setBigDecimal(1, new BigDecimal("2"));
                up.setString(2, "even");
                check("prepared UPDATE count", up.executeUpdate(), 3);
                del.setInt(1, 1);
                check("prepared DELETE count", del.executeUpdate(), 1);
                s.execute("REFRESH MATERIALIZED VIEW j_sums");
                check("view equals its query after UPDATE/DELETE and refresh", viewDiff(c, "j_sums", SUMS_Q), 0L);
                List<String> rows = new ArrayList<>();
                try (ResultSet rs = s.executeQuery("SELECT owner, total, n FROM j_sums ORDER BY owner")) {
                    while (rs.next()) rows.add(rs.getString(1) + " " + rs.getBigDecimal(2) + " " + rs.getLong(3));
                }
                check("view rows after UPDATE/DELETE", rows, List.of("even 27.00 3", "odd 19.00 3"));
            }
            // DatabaseMetaData.
            check("getTables(TABLE)", column(md.getTables(null, "public", "j_%", new String[] {"TABLE"}), "TABLE_NAME"), List.of("j_acct"));
            check("getTables(MATERIALIZED VIEW)",
                  column(md.getTables(null, "public", "j_%", new String[] {"MATERIALIZED VIEW"}), "TABLE_NAME"), List.of("j_sums"));
            List<String> cols = new ArrayList<>();
            try (ResultSet rs = md.getColumns(null, "public", "j_acct", null)) {
                // DuckDB keeps no difference between varchar and text.
                while (rs.next()) cols.add(rs.getString("COLUMN_NAME") + ":" + rs.getString("TYPE_NAME").replace("varchar", "text") + ":" + rs.getInt("NULLABLE"));
            }
            check("getColumns", cols, List.of("id:int4:0", "owner:text:0", "balance:numeric:1", "opened:date:1"));
            check("getPrimaryKeys", column(md.getPrimaryKeys(null, "public", "j_acct"), "COLUMN_NAME"), List.of("id"));
            check("getSchemas has public", column(md.getSchemas(), "TABLE_SCHEM").contains("public"), true);
            // LISTEN / NOTIFY between two connections, and a REFRESH's notifications.
            try (Connection l = DriverManager.getConnection(url);
                 Statement ls = l.createStatement();
                 Statement s = c.createStatement()) {
                ls.execute("LISTEN j_events");
                ls.execute("LISTEN duckmv_refresh");
                ls.execute("LISTEN \"duckmv_refresh.j_sums\"");
                PGConnection pl = l.unwrap(PGConnection.class);
                int pid = c.unwrap(PGConnection.class).getBackendPID();
                s.execute("NOTIFY j_events, 'hello from jdbc'");
                check("NOTIFY reaches another connection", notes(pl, 1, 10000), List.of("j_events hello from jdbc " + pid));
                s.executeUpdate("INSERT INTO j_acct VALUES (8, 'new', 1, NULL)");
                s.execute("REFRESH MATERIALIZED VIEW j_sums");
                String payload = "{\"view\":\"j_sums\",\"rows\":1} " + pid;
                List<String> got = notes(pl, 2, 10000);
                Collections.sort(got);
                check("REFRESH notifies duckmv_refresh and duckmv_refresh.<view>", got,
                      List.of("duckmv_refresh " + payload, "duckmv_refresh.j_sums " + payload));
                s.execute("REFRESH MATERIALIZED VIEW j_sums");
                check("REFRESH with nothing pending notifies nobody", notes(pl, 0, 500), List.of());
            }
        }
        System.out.println("all " + checks + " checks passed");
    }
}
