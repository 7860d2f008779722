// Tags rules (docs/scheduling.md "Headers", "Errors"): the `ttr-tags` header is a comma-separated
// list (the MCP schedule tool sends its entries as a JSON list); entries are trimmed, empty ones
// dropped and repeats removed (first occurrence kept). At most 10 tags; then each tag in listed
// order: length first, then characters.

export type ParsedTags =
  | { readonly _tag: "Ok"; readonly tags: ReadonlyArray<string> }
  | { readonly _tag: "Err"; readonly message: string }

export const MAX_TAGS = 10
export const MAX_TAG_LENGTH = 50

const TAG_CHARS = /^[a-z0-9_-]+$/

/** Length in characters (code points), so a non-ASCII tag is measured as a reader would count it. */
const tagLength = (tag: string): number => [...tag].length

/** A tag as tag policies accept it: 1 to 50 characters from `a-z 0-9 _ -`. */
export const isValidTag = (tag: string): boolean => tag.length <= MAX_TAG_LENGTH && TAG_CHARS.test(tag)

/** Parses `ttr-tags`; an absent or blank header is no tags. */
export const parseTagsHeader = (value: string | undefined): ParsedTags => parseTagList((value ?? "").split(","))

/** The same rules over a list of entries (the header's comma-separated ones, or an MCP tool's list). */
export const parseTagList = (entries: ReadonlyArray<string>): ParsedTags => {
  const tags = [...new Set(entries.map((entry) => entry.trim()).filter((entry) => entry !== ""))]
  if (tags.length > MAX_TAGS) return { _tag: "Err", message: `Maximum ${MAX_TAGS} tags allowed` }
  for (const tag of tags) {
    if (tagLength(tag) > MAX_TAG_LENGTH) {
      return { _tag: "Err", message: `Tag too long (max ${MAX_TAG_LENGTH} chars): ${tag}` }
    }
    if (!TAG_CHARS.test(tag)) {
      return { _tag: "Err", message: `Invalid tag (only a-z 0-9 _ - allowed): ${tag}` }
    }
  }
  return { _tag: "Ok", tags }
}
