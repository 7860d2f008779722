// A stored item digest stands for a trigger's compared fields (docs/internals.md "Unchanged items by
// digest"): every statement in src/store that updates one of those fields must set `item_digest` in the
// same statement (a new digest, or NULL), else /declare would take a changed trigger for unchanged. The
// database does not enforce it (a row trigger cost too much), so this test reads every `UPDATE triggers`
// statement of the store and fails for one that writes a compared field and leaves the digest alone.
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"

const STORE = path.join(import.meta.dirname, "../../src/store")

/** The columns /declare compares (domain/itemDigest.ts comparedText), as the triggers table names them. */
const COMPARED = ["kind", "scheduled_at", "cron_expr", "cron_tz", "url", "method", "headers", "body", "sealed_with", "content_type", "title", "tags", "retry"]

/** Each `UPDATE triggers … SET …` of a source text: its SET list, up to the clause that ends it. */
const setListsOf = (source: string): Array<string> => {
  const lists: Array<string> = []
  for (const match of source.matchAll(/UPDATE\s+triggers\b[^`]*?\bSET\b([\s\S]*?)(?=\bFROM\b|\bWHERE\b|\bRETURNING\b|`)/g)) {
    lists.push(match[1]!)
  }
  return lists
}

/** The SET list assigns `column`: its name first in the list or after a comma (a comparison elsewhere is no assignment). */
const assigns = (setList: string, column: string) => new RegExp(`(^|,)\\s*${column}\\s*=`).test(setList)

describe("writers of a trigger's compared fields clear or rewrite its item digest", () => {
  const files = fs.readdirSync(STORE).filter((file) => file.endsWith(".ts"))

  it("reads the statements it checks (the rule has writers to hold)", () => {
    const writers = files.flatMap((file) => setListsOf(fs.readFileSync(path.join(STORE, file), "utf8")))
      .filter((list) => COMPARED.some((column) => assigns(list, column)))
    // the /schedule edit, the generator's update, /declare's and /bulk's update, the re-seal
    expect(writers.length).toBeGreaterThanOrEqual(4)
  })

  it.each(files)("%s", (file) => {
    const source = fs.readFileSync(path.join(STORE, file), "utf8")
    for (const list of setListsOf(source)) {
      const written = COMPARED.filter((column) => assigns(list, column))
      if (written.length === 0) continue
      expect({ file, written, setsDigest: assigns(list, "item_digest") }).toEqual({ file, written, setsDigest: true })
    }
  })

  it("flags a statement that writes a compared field without the digest", () => {
    const [list] = setListsOf("sql`UPDATE triggers SET url = ${url}, updated_at = now() WHERE id = ${id}`")
    expect(list).toBeDefined()
    expect(assigns(list!, "url")).toBe(true)
    expect(assigns(list!, "item_digest")).toBe(false)
    const [cleared] = setListsOf("sql`UPDATE triggers t SET headers = x.h, item_digest = NULL FROM x WHERE t.id = x.id`")
    expect(assigns(cleared!, "item_digest")).toBe(true)
    // a comparison in a condition is no assignment
    const [other] = setListsOf("sql`UPDATE triggers SET status = CASE WHEN kind = 'job' THEN 'x' END WHERE id = ${id}`")
    expect(assigns(other!, "kind")).toBe(false)
  })
})
