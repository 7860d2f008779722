-- WAL per finished trigger, two ways of letting it go: updated in place when its attempt is recorded
-- and deleted by retention later (what the service does), against moved to a history table partitioned
-- by time when it finishes (whose days retention would drop whole). docs/operations.md "Retention"
-- cites its figures. Run on a scratch database the service has migrated (start it once with
-- DATABASE_URL pointing there), never on one with data:
--   psql -h 127.0.0.1 -U postgres -d scratch -f scripts/bench/finishedTriggerWal.sql
-- Each phase starts after a CHECKPOINT, so the first change to each page writes its full image (the
-- worst case, the same for both ways).
\set ON_ERROR_STOP 1
\pset footer off
insert into projects(id, name, monthly_quota, retry_policy, created_at, updated_at)
  values ('00000000-0000-7000-8000-000000000001', 'wal-probe', 1000000, '{}', now(), now()) on conflict do nothing;
truncate triggers cascade;
drop table if exists wal_probe_history;
create table wal_probe_history (like triggers including defaults) partition by range (updated_at);
create table wal_probe_history_all partition of wal_probe_history for values from ('2000-01-01') to ('2100-01-01');
alter table wal_probe_history add primary key (id, updated_at);
create index on wal_probe_history (project_id, id desc);
-- 200,000 registered one-shots of the delivery bench's shape
insert into triggers(id, project_id, kind, shard, status, scheduled_at, due_at, url, method, headers, body,
                     content_type, tags, created_at, updated_at)
select gen_random_uuid(), '00000000-0000-7000-8000-000000000001', 'job', i % 64, 'registered', now(), now(),
       'http://127.0.0.1:3000/hook', 'POST', '{"content-type":"application/json","x-n":"1"}'::jsonb,
       convert_to('{"n":' || i || '}', 'UTF8'), 'application/json', '{}', now(), now()
from generate_series(1, 200000) i;
vacuum analyze triggers;
create temp table probe_ids as select id, row_number() over () as rn from triggers;
create index on probe_ids (rn);
-- (a) the first 100,000: the attempt's record updates the row in place (batches of 1,000) ...
checkpoint;
select pg_current_wal_lsn() as a0 \gset
do $$ begin for b in 0..99 loop
  update triggers set status = 'completed', attempts = 1, updated_at = now(), claimed_by = null
  where id in (select id from probe_ids where rn > b * 1000 and rn <= (b + 1) * 1000);
end loop; end $$;
select pg_current_wal_lsn() as a1 \gset
-- ... and retention deletes it later (batches of 500)
checkpoint;
select pg_current_wal_lsn() as r0 \gset
do $$ begin for b in 0..199 loop
  delete from triggers where id in (select id from probe_ids where rn > b * 500 and rn <= (b + 1) * 500);
end loop; end $$;
select pg_current_wal_lsn() as r1 \gset
-- (b) the next 100,000: the record moves the row to the history table instead
checkpoint;
select pg_current_wal_lsn() as b0 \gset
do $$ begin for b in 100..199 loop
  with moved as (delete from triggers where id in (select id from probe_ids where rn > b * 1000 and rn <= (b + 1) * 1000) returning *)
  insert into wal_probe_history
  select id, project_id, kind, generator_id, shard, 'completed', scheduled_at, due_at, url, method, headers, body,
         content_type, title, tags, custom_key, retry, cron_expr, cron_tz, 1, triggered_by, null, created_at, now(),
         claimed_at, key_scope, sealed_with, traceparent, tracestate
  from moved;
end loop; end $$;
select pg_current_wal_lsn() as b1 \gset
select 'updated in place' as way, round(pg_wal_lsn_diff(:'a1', :'a0') / 100000.0) as wal_bytes_at_finish,
       round(pg_wal_lsn_diff(:'r1', :'r0') / 100000.0) as wal_bytes_at_retention
union all
select 'moved to history', round(pg_wal_lsn_diff(:'b1', :'b0') / 100000.0), 0;
truncate triggers cascade;
drop table wal_probe_history;
delete from projects where name = 'wal-probe';
