// What the object row's indexes cost SQLite alone (docs/PERFORMANCE.md, "The layout's own
// cost, 0.18 round"). Build and run:
//   gcc -O2 -o /tmp/layout_cost scripts/layout_cost.c -lsqlite3
//   valgrind --tool=callgrind --collect-atstart=no /tmp/layout_cost VARIANT /tmp/l.sqlite 50000 4000
// VARIANT: 0 the schema's layout, 1 without AUTOINCREMENT, 2 without `created`, 3 without
// `size`, 4 without `accessed`, 5 without `owner, size, collection, key`. N objects are put
// first, then M more are counted, in commits of 20 with synchronous off.
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/callgrind.h>
static void ex(sqlite3*db,const char*s){char*e=0;if(sqlite3_exec(db,s,0,0,&e)){fprintf(stderr,"%s: %s\n",s,e);exit(1);}}
int main(int argc,char**argv){
  int variant=atoi(argv[1]); const char*path=argv[2]; int N=atoi(argv[3]), M=atoi(argv[4]);
  sqlite3*db; remove(path); char w[512]; snprintf(w,512,"%s-wal",path); remove(w);
  sqlite3_open(path,&db);
  ex(db,"PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; PRAGMA wal_autocheckpoint=0;");
  ex(db,"CREATE TABLE meta (key TEXT PRIMARY KEY, value ANY) WITHOUT ROWID; INSERT INTO meta VALUES('commit',0);");
  const char*auto_=(variant==1)?"":"AUTOINCREMENT";
  char sql[2048];
  snprintf(sql,2048,"CREATE TABLE object (id INTEGER PRIMARY KEY %s, collection TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, metadata TEXT, owner TEXT NOT NULL, created REAL NOT NULL, modified REAL NOT NULL, accessed REAL NOT NULL, pinned INTEGER NOT NULL DEFAULT 0, size INTEGER NOT NULL DEFAULT 0, files INTEGER NOT NULL DEFAULT 0, UNIQUE(collection,key));",auto_);
  ex(db,sql);
  ex(db,"CREATE INDEX os ON object(owner,size,collection,key);");
  if(variant!=3) ex(db,"CREATE INDEX s ON object(size);");
  if(variant!=4) ex(db,"CREATE INDEX a ON object(accessed);");
  if(variant!=2) ex(db,"CREATE INDEX c ON object(created);");
  if(variant==5) ex(db,"DROP INDEX os;");
  sqlite3_stmt*ins,*cm;
  sqlite3_prepare_v2(db,"INSERT INTO object(collection,key,value,metadata,owner,created,modified,accessed,size,files) VALUES(?,?,?,NULL,?,?,?,?,0,0)",-1,&ins,0);
  sqlite3_prepare_v2(db,"UPDATE meta SET value=value+1 WHERE key='commit' RETURNING value",-1,&cm,0);
  double now=1.7e9; char key[32],val[64],own[16];
  for(int phase=0;phase<2;phase++){
    int count=phase?M:N; int base=phase?N:0;
    if(phase) CALLGRIND_TOGGLE_COLLECT;
    for(int i=0;i<count;i++){
      if(i%20==0){ ex(db,"BEGIN IMMEDIATE"); sqlite3_step(cm); sqlite3_reset(cm);}
      int k=base+i; snprintf(key,32,"b%08d",k); snprintf(own,16,"owner%02d",k%100); snprintf(val,64,"{\"owner\":\"%s\",\"n\":%d}",own,k);
      now+=0.00003;
      sqlite3_bind_text(ins,1,"bench",-1,SQLITE_STATIC); sqlite3_bind_text(ins,2,key,-1,SQLITE_TRANSIENT);
      sqlite3_bind_text(ins,3,val,-1,SQLITE_TRANSIENT); sqlite3_bind_text(ins,4,own,-1,SQLITE_TRANSIENT);
      sqlite3_bind_double(ins,5,now);sqlite3_bind_double(ins,6,now);sqlite3_bind_double(ins,7,now);
      if(sqlite3_step(ins)!=SQLITE_DONE){fprintf(stderr,"ins %s\n",sqlite3_errmsg(db));return 1;} sqlite3_reset(ins);
      if(i%20==19||i==count-1) ex(db,"COMMIT");
      if(!phase && i%20000==19999) ex(db,"PRAGMA wal_checkpoint(TRUNCATE)");
    }
    if(!phase) ex(db,"PRAGMA wal_checkpoint(TRUNCATE)");
    if(phase) CALLGRIND_TOGGLE_COLLECT;
  }
  sqlite3_close(db); return 0;
}
