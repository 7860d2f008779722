// A JSON answer written as it is read (docs/reading.md "Paging"): `{"<name>":[entry,entry,…]}` whose entries
// come from a stream, each chunk of the stream encoded and written once the client has taken the
// previous one (the server waits for the socket to drain), so a node holds one chunk of a long list,
// never the whole answer. The status (200) is sent before the first entry: a failure while the
// entries are read ends the answer early (the client sees a cut JSON document, not a complete one).
import * as Stream from "effect/Stream"
import { HttpServerResponse } from "effect/http"

/** `{"<name>":[…]}` with the entries of `entries`, 200, written chunk by chunk. */
export const jsonArrayStream = <A, E>(name: string, entries: Stream.Stream<A, E>) =>
  HttpServerResponse.stream(
    Stream.make(`{${JSON.stringify(name)}:[`).pipe(
      Stream.concat(Stream.mapArray(entries, (chunk, index) => [(index === 0 ? "" : ",") + chunk.map((entry) => JSON.stringify(entry)).join(",")] as const)),
      Stream.concat(Stream.make("]}")),
      Stream.encodeText
    ),
    { contentType: "application/json" }
  )
