// Which node process owns a loopback TCP connection (Linux /proc). The target uses it to tell which
// node sent an arrival (by the connection's source port), the database inspection to tell which node
// holds a PostgreSQL session (by pg_stat_activity.client_port), without any help from the service.
// When the harness runs as root every node runs under a uid of its own, and one read of /proc/net/tcp
// (whose uid column names the socket's owner) attributes every connection at once; otherwise the
// socket inodes among each process's file descriptors are matched against the table, which is slower
// and can miss a connection that closed before the scan. Reads are asynchronous (libuv's thread pool),
// so a scan never stalls the event loop that timestamps arrivals.
import * as fs from "node:fs/promises"

export interface OwnedProcess {
  readonly index: number
  readonly pid: number
  /** The uid the process runs under, when it is its own (see nodes.ts). */
  readonly uid?: number | undefined
}

/** Socket inodes of a process's open file descriptors; empty when it is gone or unreadable. */
const socketInodes = async (pid: number): Promise<ReadonlyArray<string>> => {
  let fds: Array<string>
  try {
    fds = await fs.readdir(`/proc/${pid}/fd`)
  } catch {
    return []
  }
  const links = await Promise.all(fds.map((fd) => fs.readlink(`/proc/${pid}/fd/${fd}`).catch(() => "")))
  return links.filter((link) => link.startsWith("socket:[")).map((link) => link.slice(8, -1))
}

const readTable = (file: string): Promise<ReadonlyArray<string>> =>
  fs.readFile(file, "utf8").then((text) => text.split("\n").slice(1), () => [])

/**
 * For every open connection of one of `processes` to `remotePort` on this host: its local port → the
 * process's index.
 */
export const connectionOwners = async (processes: ReadonlyArray<OwnedProcess>, remotePort: number): Promise<Map<number, number>> => {
  const owners = new Map<number, number>()
  if (processes.length === 0) return owners
  const byUid = processes.every((process) => process.uid !== undefined)
    ? new Map(processes.map((process) => [String(process.uid), process.index]))
    : undefined
  const byInode = new Map<string, number>()
  if (byUid === undefined) {
    const inodes = await Promise.all(processes.map((process) => socketInodes(process.pid)))
    processes.forEach((process, i) => {
      for (const inode of inodes[i]!) byInode.set(inode, process.index)
    })
    if (byInode.size === 0) return owners
  }
  const tables = await Promise.all([readTable("/proc/net/tcp"), readTable("/proc/net/tcp6")])
  const portSuffix = `:${remotePort.toString(16).toUpperCase().padStart(4, "0")}`
  for (const line of tables.flat()) {
    if (!line.includes(portSuffix)) continue
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
    const fields = line.trim().split(/\s+/)
    if (fields.length < 10) continue
    const local = fields[1]!
    const remote = fields[2]!
    if (!remote.endsWith(portSuffix) || fields[3] !== "01") continue // established only
    const owner = byUid === undefined ? byInode.get(fields[9]!) : byUid.get(fields[7]!)
    if (owner === undefined) continue
    owners.set(Number.parseInt(local.slice(local.lastIndexOf(":") + 1), 16), owner)
  }
  return owners
}
