// targetOf: a URL whose host was seen lately takes the quick path (its path as written); whichever
// path it takes, its target is the one a full WHATWG parse gives.
import { assert, describe, it } from "@effect/vitest"
import { InvalidRequestError } from "../../src/delivery/classify.ts"
import { targetOf } from "../../src/delivery/targets.ts"

/** What a full parse makes of the URL (the slow path's rules, written out). */
const expected = (text: string) => {
  const url = new URL(text)
  const hostname = url.hostname.replace(/^\[(.*)\]$/, "$1")
  return {
    origin: url.origin,
    path: `${url.pathname}${url.search}`,
    hostname,
    servername: url.protocol === "https:" && !/^[\d.]+$|:/.test(hostname) ? hostname : null
  }
}

const URLS = [
  "http://127.0.0.1:8080/sink/1/2?i=3",
  "http://127.0.0.1:8080/sink/1/4",
  "http://127.0.0.1:80/x",
  "https://api.example.com/hooks/1?a=b&c=d;e",
  "https://API.Example.com:443/hooks/2",
  "https://api.example.com/a/./b",
  "https://api.example.com/a/../b",
  "https://api.example.com/a/%2e%2E/b",
  "https://api.example.com/a/.well-known",
  "https://api.example.com/a b",
  "https://api.example.com/a?x='y'",
  "https://api.example.com/a?",
  "https://api.example.com/a?b#frag",
  "https://api.example.com/a\\b",
  "https://api.example.com/ä",
  "https://api.example.com/%zz/%41",
  "https://api.example.com/a{b}`c^",
  "https://api.example.com#x/y",
  "https://api.example.com?x/y",
  "https://user:pa%20ss@api.example.com/a",
  "http://[::1]:9000/v6/path",
  "https://[2001:db8::1]/v6",
  "https://xn--bcher-kva.example/a",
  "https://bücher.example/a",
  "HTTPS://api.example.com/upper",
  "https://api.example.com:/empty-port",
  "https://api.example.com:0443/padded-port"
]

describe("targetOf", () => {
  it("gives what a full parse gives, the host already known or not", () => {
    for (const round of [1, 2]) {
      for (const text of URLS) {
        const target = targetOf(text)
        if (target instanceof InvalidRequestError) assert.fail(`${text} (round ${round}): ${target.message}`)
        const { basicCredentials: _, ...rest } = target
        assert.deepStrictEqual(rest, expected(text), `${text} (round ${round})`)
      }
    }
  })

  it("a new path of a known host: its path as written", () => {
    targetOf("http://127.0.0.1:9999/first")
    assert.deepStrictEqual(targetOf("http://127.0.0.1:9999/second/3?q=1"), {
      origin: "http://127.0.0.1:9999",
      path: "/second/3?q=1",
      hostname: "127.0.0.1",
      servername: null,
      basicCredentials: null
    })
  })

  it("credentials, bad URLs and other schemes go through the full parse", () => {
    const withUser = targetOf("https://user:pass@api.example.com/a")
    assert.ok(!(withUser instanceof InvalidRequestError))
    assert.strictEqual((withUser as { basicCredentials: string }).basicCredentials, Buffer.from("user:pass").toString("base64"))
    for (const text of ["http://exa mple.com/a", "http://:80/a", "ftp://example.com/a"]) {
      const target = targetOf(text)
      assert.ok(target instanceof InvalidRequestError, text)
    }
  })
})
