/* The cost of `MinFreeStep.need`'s query of the bytes queued for unlinking (docs/PERFORMANCE.md,
   "Files counted once by identity, 0.15 round"), prepared once and run REPS times, bound as
   the engine binds it (no lease, one device, every row due). MODE 1: grouped by identity, as
   kept; 2: a plain sum of the due rows; 3: a plain sum less the extra names, by a correlated
   look (run it on a copy with CREATE INDEX unlink_queue_identity ON unlink_queue(inode, device));
   4: the later batches' count of the 0.16 round (MinFreeQueue.swift), the rows queued since, the
   last 1,000 of N (pass N after REPS); 5: its rows due again since, a window of one second
   along unlink_queue_due (none there: every row as queued).
   Per query: a run of REPS n less a run of REPS 1, over n - 1 (n = 3 at 10^5 rows, 2 at 10^6).
   Mode 3 without that index scans the queue for each row: do not run it so.
     sqlite3 q.db < (the SQL below, :N replaced by the number of rows)
     cc -O2 -o minfree_need_cost scripts/minfree_need_cost.c -lsqlite3
     valgrind --tool=callgrind ./minfree_need_cost q.db MODE REPS

   PRAGMA journal_mode=WAL;
   CREATE TABLE unlink_queue (id INTEGER PRIMARY KEY AUTOINCREMENT, path TEXT NOT NULL,
     device INTEGER, inode INTEGER, commit_no INTEGER NOT NULL, queued_at REAL NOT NULL,
     attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT, next_attempt REAL NOT NULL,
     size INTEGER, birth INTEGER, generation INTEGER, ctime INTEGER);
   CREATE INDEX unlink_queue_due ON unlink_queue(next_attempt);
   CREATE INDEX unlink_queue_path ON unlink_queue(path);
   WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :N)
   INSERT INTO unlink_queue (id, path, device, inode, size, birth, generation, ctime, commit_no,
     queued_at, next_attempt)
   SELECT i, printf('/srv/assets/cache/%02d/%04d/object-%08d.bin', i % 97, i % 1000, i), 2049,
     CASE WHEN i % 10 = 2 THEN 100000 + i - 1 ELSE 100000 + i END, 4096 + i % 5000, 1, 2, 3,
     i / 1000, 1.7e9 + i / 1000.0, 1.7e9 + 600 + i / 1000.0 FROM n; */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
static const char *due = "attempts = 0 AND next_attempt <= MAX(?1, queued_at + ?2) AND path NOT IN (SELECT value FROM json_each(?3)) AND device IN (?4)";
int main(int argc, char **argv) {
    sqlite3 *db; sqlite3_open(argv[1], &db); int mode = atoi(argv[2]);
    sqlite3_exec(db, "PRAGMA cache_size=-400000", 0, 0, 0);
    char sql[2000];
    if (mode == 1) snprintf(sql, sizeof sql, "SELECT CAST(TOTAL(s) AS INTEGER) FROM (SELECT MAX(size) AS s FROM unlink_queue WHERE %s GROUP BY unlink_queue.inode, unlink_queue.device, unlink_queue.birth, unlink_queue.generation, CASE WHEN inode IS NULL THEN id END)", due);
    else if (mode == 2) snprintf(sql, sizeof sql, "SELECT CAST(TOTAL(size) AS INTEGER) FROM unlink_queue WHERE %s", due);
    else if (mode == 3) snprintf(sql, sizeof sql, "SELECT CAST(TOTAL(size) AS INTEGER) FROM unlink_queue q WHERE %s AND NOT EXISTS (SELECT 1 FROM unlink_queue r WHERE r.inode = q.inode AND r.device = q.device AND r.birth IS q.birth AND r.generation IS q.generation AND r.id <> q.id AND (r.size > q.size OR (r.size = q.size AND r.id < q.id)) AND r.attempts = 0 AND r.next_attempt <= MAX(?1, r.queued_at + ?2) AND r.path NOT IN (SELECT value FROM json_each(?3)))", due);
    else if (mode == 4) snprintf(sql, sizeof sql, "SELECT CAST(TOTAL(s) AS INTEGER) FROM (SELECT MAX(size) AS s FROM unlink_queue WHERE %s AND id > ?5 AND id <= ?6 GROUP BY unlink_queue.inode, unlink_queue.device, unlink_queue.birth, unlink_queue.generation, CASE WHEN inode IS NULL THEN id END)", due);
    else if (mode == 5) snprintf(sql, sizeof sql, "SELECT CAST(TOTAL(s) AS INTEGER) FROM (SELECT MAX(size) AS s FROM unlink_queue WHERE %s AND next_attempt > ?5 AND next_attempt <= ?1 AND next_attempt > queued_at + ?2 AND +id <= ?6 GROUP BY unlink_queue.inode, unlink_queue.device, unlink_queue.birth, unlink_queue.generation, CASE WHEN inode IS NULL THEN id END)", due);
    else snprintf(sql, sizeof sql, "SELECT 1");
    sqlite3_stmt *s; if (sqlite3_prepare_v2(db, sql, -1, &s, 0)) { fprintf(stderr, "%s\n", sqlite3_errmsg(db)); return 1; }
    /* warm the page cache with one plain scan so each mode pays only its query */
    sqlite3_exec(db, "SELECT SUM(size) FROM unlink_queue", 0, 0, 0);
    int reps = argc > 3 ? atoi(argv[3]) : 1;
    long long n = argc > 4 ? atoll(argv[4]) : 0;
    for (int r = 0; r < reps; r++) {
        sqlite3_bind_double(s, 1, 1.7e9 + 5000); sqlite3_bind_double(s, 2, 600); sqlite3_bind_text(s, 3, "[]", -1, SQLITE_STATIC); sqlite3_bind_int64(s, 4, 2049);
        if (mode == 4) { sqlite3_bind_int64(s, 5, n - 1000); sqlite3_bind_int64(s, 6, n); }
        if (mode == 5) { sqlite3_bind_double(s, 5, 1.7e9 + 4999); sqlite3_bind_int64(s, 6, n); }
        while (sqlite3_step(s) == SQLITE_ROW) if (r == 0) printf("mode %d: %lld\n", mode, sqlite3_column_int64(s, 0));
        sqlite3_reset(s);
    }
    sqlite3_finalize(s); sqlite3_close(db); return 0;
}
