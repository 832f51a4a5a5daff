/* The cost of the commit's look at file_shared after file rows go (docs/PERFORMANCE.md, "Files
   counted once by identity, 0.15 round"): 20,000 file rows deleted by id, each read first, in
   batches of 1,000 in one transaction, then, by MODE, the engine's `dropLeftShared` statements.
     0: the deletes alone;  4: one EXISTS a batch (nothing listed, more than one noted);
     1..3: a probe of `SharedFiles.dropSQL` for each deleted row's inode and device.
   Make the database (1,000,000 rows, as the 0.14 round's), then copies for each mode:
     sqlite3 base.db < (the SQL at the end of this comment)
     mode 1: base.db plus INSERT INTO file_shared VALUES (1, 1) (listed, not these files);
     mode 2: base.db plus two more rows for each deleted row's inode, all listed (kept);
     mode 3: base.db plus one more row for each, listed (dropped): see the round's text.
   cc -O2 -o shared_drop_cost scripts/shared_drop_cost.c -lsqlite3
   valgrind --tool=callgrind ./shared_drop_cost COPY.db MODE   (a fresh copy each run)

   PRAGMA journal_mode=WAL;
   CREATE TABLE file (id INTEGER PRIMARY KEY AUTOINCREMENT, path TEXT NOT NULL UNIQUE,
     size INTEGER NOT NULL, device INTEGER, inode INTEGER, mtime REAL, missing INTEGER NOT NULL,
     first_seen REAL NOT NULL, birth INTEGER, generation INTEGER, ctime INTEGER, claim TEXT);
   CREATE INDEX file_identity ON file(inode, device, size);
   CREATE TABLE file_shared (inode INTEGER NOT NULL, device INTEGER NOT NULL,
     PRIMARY KEY (inode, device)) WITHOUT ROWID;
   WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000)
   INSERT INTO file (id, path, size, device, inode, mtime, missing, first_seen, birth, generation, ctime)
   SELECT i, printf('/srv/assets/cache/%02d/%04d/object-%08d.bin', i % 97, i % 1000, i),
     4096 + i % 5000, 2049, 100000 + i, 1.7e9, 0, 1.7e9, 1, 2, 3 FROM n;
   Mode 3's extra rows (a second name of each file deleted), then mode 2's (a third):
   INSERT INTO file (id, path, size, device, inode, mtime, missing, first_seen, birth,
     generation, ctime) SELECT 2000000 + id, path || '.l', size, device, inode, mtime,
     missing, first_seen, birth, generation, ctime FROM file WHERE id % 10 = 1 AND id <= 200000;
   INSERT INTO file_shared SELECT inode, device FROM file WHERE id % 10 = 1 AND id <= 200000;
   mode 2 only: the first INSERT again with 3000000 + id and path || '.m'. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
static sqlite3_stmt *prep(sqlite3 *db, const char *sql) {
    sqlite3_stmt *s; if (sqlite3_prepare_v2(db, sql, -1, &s, 0) != SQLITE_OK) { fprintf(stderr, "%s\n", sqlite3_errmsg(db)); exit(1); } return s; }
static void run(sqlite3_stmt *s) { while (sqlite3_step(s) == SQLITE_ROW) {} sqlite3_reset(s); }
int main(int argc, char **argv) {
    sqlite3 *db; sqlite3_open(argv[1], &db); int mode = atoi(argv[2]);
    sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; PRAGMA cache_size=-200000", 0, 0, 0);
    sqlite3_stmt *rd = prep(db, "SELECT inode, device FROM file WHERE id = ?");
    sqlite3_stmt *del = prep(db, "DELETE FROM file WHERE id = ?");
    sqlite3_stmt *any = prep(db, "SELECT EXISTS (SELECT 1 FROM file_shared)");
    sqlite3_stmt *drop = prep(db, "DELETE FROM file_shared AS s WHERE s.inode = ?1 AND s.device = ?2 AND "
        "(SELECT COUNT(*) FROM (SELECT 1 FROM file f WHERE f.inode = s.inode AND f.device = s.device LIMIT 2)) < 2");
    static sqlite3_int64 in[1000], dv[1000];
    sqlite3_exec(db, "BEGIN", 0, 0, 0);
    for (int b = 0; b < 20; b++) {
        int n = 0;
        for (int k = 0; k < 1000; k++) {
            sqlite3_int64 id = (sqlite3_int64)(b * 1000 + k) * 10 + 1;
            sqlite3_bind_int64(rd, 1, id);
            if (sqlite3_step(rd) == SQLITE_ROW) { in[n] = sqlite3_column_int64(rd, 0); dv[n] = sqlite3_column_int64(rd, 1); n++; }
            sqlite3_reset(rd);
            sqlite3_bind_int64(del, 1, id); run(del);
        }
        if (mode == 0) continue;
        if (mode == 4) { sqlite3_step(any); int a = sqlite3_column_int(any, 0); sqlite3_reset(any); if (!a) continue; }
        for (int k = 0; k < n; k++) { sqlite3_bind_int64(drop, 1, in[k]); sqlite3_bind_int64(drop, 2, dv[k]); run(drop); }
    }
    sqlite3_exec(db, "COMMIT", 0, 0, 0);
    sqlite3_stmt *c = prep(db, "SELECT COUNT(*) FROM file_shared"); sqlite3_step(c);
    printf("mode %d: file_shared %lld\n", mode, sqlite3_column_int64(c, 0)); sqlite3_reset(c);
    sqlite3_finalize(c); sqlite3_finalize(rd); sqlite3_finalize(del); sqlite3_finalize(any); sqlite3_finalize(drop);
    sqlite3_close(db); return 0;
}
