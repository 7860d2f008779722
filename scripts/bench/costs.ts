// What a delivery costs, beside how fast deliveries go: the CPU time of the process doing the work
// (timewheel's service, a peer's worker process), the CPU time of the PostgreSQL server (its postmaster
// with every backend, exited ones included), and the WAL PostgreSQL wrote, between two snapshots around
// the delivery window; and how often the server flushed its WAL to disk (a synchronous commit waits for
// one) and how many transactions the run's database committed. CPU time is what a process used, not how
// long it waited: far less moved by what else the machine runs than a rate is (BENCHMARKS.md "Delivery:
// what one delivery costs"). The flushes are the server's, every database's: on a server of its own
// (the bench's embedded one) they are the run's.
import * as fs from "node:fs"
import { query } from "./database.ts"

/** Clock ticks per second of /proc's times (USER_HZ, 100 on Linux). */
const TICKS_PER_S = 100

/** utime + stime (and, with `children`, cutime + cstime of reaped children) of a process, in ms. */
export const cpuMsOf = (pid: number, children: boolean): number => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
  // the fields after the command name (which may hold spaces) start after its closing parenthesis
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  const [utime, stime, cutime, cstime] = [fields[11], fields[12], fields[13], fields[14]].map(Number)
  return ((utime! + stime! + (children ? cutime! + cstime! : 0)) * 1000) / TICKS_PER_S
}

const parentOf = (pid: number): number => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
}

/** The postmaster and its live children: their CPU time, exited backends' included (reaped into the postmaster's). */
const serverCpuMs = (postmaster: number): number => {
  let total = cpuMsOf(postmaster, true)
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    const pid = Number(entry)
    try {
      if (parentOf(pid) === postmaster) total += cpuMsOf(pid, false)
    } catch {
      // exited meanwhile: its time is in the postmaster's children's now
    }
  }
  return total
}

export interface CostSnapshot {
  readonly workerCpuMs: number
  readonly postgresCpuMs: number
  readonly walLsn: string
  readonly walSyncs: number
  readonly commits: number
}

export interface Costs {
  /** CPU time of the working process per operation (µs). */
  readonly workerCpuUs: number
  /** CPU time of the whole PostgreSQL server per operation (µs). */
  readonly postgresCpuUs: number
  /** WAL written per operation (bytes). */
  readonly walBytes: number
  /** WAL flushes to disk (fsync or fdatasync) per operation, the server's. */
  readonly walSyncs: number
  /** Transactions the database committed per operation. */
  readonly commits: number
}

/**
 * The server's WAL flushes so far: pg_stat_wal.wal_sync up to PostgreSQL 17, the `wal` rows of
 * pg_stat_io from 18 on (where the counter moved); each query only parses on its own versions.
 */
const walSyncsSql = (versionNum: number) =>
  versionNum >= 180000
    ? "SELECT coalesce(sum(fsyncs), 0)::bigint::text AS syncs FROM pg_stat_io WHERE object = 'wal'"
    : "SELECT wal_sync::text AS syncs FROM pg_stat_wal"

/** Snapshots of the worker `pid` and the server of `databaseUrl` (which must run on this machine). */
export const costProbe = async (databaseUrl: string, pid: number) => {
  // the postmaster's pid is the first line of postmaster.pid in the server's data directory
  const dataDirectory = (await query<{ setting: string }>(databaseUrl,
    "SELECT setting FROM pg_settings WHERE name = 'data_directory'"))[0]!.setting
  const postmaster = Number(fs.readFileSync(`${dataDirectory}/postmaster.pid`, "utf8").split("\n")[0])
  const versionNum = Number((await query<{ v: string }>(databaseUrl, "SELECT current_setting('server_version_num') AS v"))[0]!.v)
  const snapshot = async (): Promise<CostSnapshot> => ({
    workerCpuMs: cpuMsOf(pid, false),
    postgresCpuMs: serverCpuMs(postmaster),
    walLsn: (await query<{ lsn: string }>(databaseUrl, "SELECT pg_current_wal_lsn()::text AS lsn"))[0]!.lsn,
    walSyncs: Number((await query<{ syncs: string }>(databaseUrl, walSyncsSql(versionNum)))[0]!.syncs),
    commits: Number((await query<{ commits: string }>(databaseUrl,
      "SELECT xact_commit::text AS commits FROM pg_stat_database WHERE datname = current_database()"))[0]!.commits)
  })
  const perOperation = async (before: CostSnapshot, after: CostSnapshot, operations: number): Promise<Costs> => {
    const wal = await query<{ bytes: string }>(databaseUrl,
      `SELECT pg_wal_lsn_diff('${after.walLsn}', '${before.walLsn}')::bigint::text AS bytes`)
    const per = (value: number, digits = 1) => Math.round((value / Math.max(1, operations)) * 10 ** digits) / 10 ** digits
    return {
      workerCpuUs: per((after.workerCpuMs - before.workerCpuMs) * 1000),
      postgresCpuUs: per((after.postgresCpuMs - before.postgresCpuMs) * 1000),
      walBytes: per(Number(wal[0]!.bytes)),
      walSyncs: per(after.walSyncs - before.walSyncs, 3),
      commits: per(after.commits - before.commits, 3)
    }
  }
  return { snapshot, perOperation }
}
