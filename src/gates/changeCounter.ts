// Which reads of a policy cache are stale (gates/tagPolicyCache.ts, gates/targetPolicyCache.ts): a
// read that began before a change of its project was heard may come back after it, carrying what the
// change replaced. Every change heard bumps its project's counter (and a change of everything, such as
// a listener that reconnects, bumps all of them); a read notes the counter when it begins, and what it
// read may be kept only when the counter has not moved since. The caller still uses what it read once
// (it was true when read); it only must not remember it.
const MAX_PROJECTS = 10_000

/** When a read began: compare with `changedSince`. */
export type ReadMark = number

export class ChangeCounter {
  /** Bumped at every change heard. */
  #seq = 0
  /** The last change heard of each project. */
  readonly #lastChange = new Map<string, number>()
  /** The last change of every project at once. */
  #allChangedAt = 0

  /** A change of `projectId` was heard. */
  changed(projectId: string): void {
    if (this.#lastChange.size >= MAX_PROJECTS) this.changedAll()
    this.#lastChange.set(projectId, ++this.#seq)
  }

  /** Anything may have changed (a listener that was away). */
  changedAll(): void {
    this.#lastChange.clear()
    this.#allChangedAt = ++this.#seq
  }

  /** A read begins now. */
  mark(): ReadMark {
    return this.#seq
  }

  /** A change of `projectId` (or of everything) was heard after `mark`: what was read then is stale. */
  changedSince(projectId: string, mark: ReadMark): boolean {
    return Math.max(this.#allChangedAt, this.#lastChange.get(projectId) ?? 0) > mark
  }

  /** The projects changed after `mark` (null: every project may have). */
  projectsChangedSince(mark: ReadMark): ReadonlyArray<string> | null {
    if (this.#allChangedAt > mark) return null
    const out: Array<string> = []
    for (const [projectId, at] of this.#lastChange) if (at > mark) out.push(projectId)
    return out
  }
}
