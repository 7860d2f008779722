// Migration 9 on the secrets of an existing database: a secret of the earlier format (whsec_ + 64 hex,
// the whole string the HMAC key), current or previous, becomes whsec_ + base64 of its SHA-256, the
// same as domain/signing.ts standardFormOfLegacySecret, so every signature stays what it was; a secret
// already in the Standard Webhooks encoding is left alone; a project created by the column default
// afterwards gets one in the new encoding.
import { assert, describe, layer } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as crypto from "node:crypto"
import { generateSigningSecret, SIGNING_SECRET_PATTERN, standardFormOfLegacySecret } from "../../src/domain/signing.ts"
import { migrate } from "../../src/store/db.ts"
import { MIGRATIONS } from "../../src/store/schema.ts"
import { freshDatabaseUrl } from "../support/database.ts"

const Database = Layer.unwrap(Effect.map(freshDatabaseUrl, (url) => PgClient.layer({ url: Redacted.make(url), maxConnections: 2 })))

const legacy = () => `whsec_${crypto.randomBytes(32).toString("hex")}`

layer(Database, { timeout: "60 seconds" })("migration 9: signing secrets", (it) => {
  describe("an existing database", () => {
    it.effect("earlier secrets are rewritten to sign the same; new-format secrets and the default are in the standard encoding", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* migrate({ shards: 4, nowMs: 0, migrations: MIGRATIONS.filter((m) => m.version < 9) })
        const [oldCurrent, oldPrevious, alreadyNew] = [legacy(), legacy(), generateSigningSecret()]
        const insert = (name: string, secret: string, previous: string | null) =>
          sql`INSERT INTO projects (id, name, monthly_quota, retry_policy, signing_secret, previous_signing_secret,
              previous_signing_secret_until, created_at, updated_at)
            VALUES (${crypto.randomUUID()}, ${name}, 10, '{}'::jsonb, ${secret}, ${previous},
              ${previous === null ? null : new Date(Date.now() + 3_600_000)}, now(), now())`
        yield* insert("rotating", oldCurrent, oldPrevious)
        yield* insert("converted-already", alreadyNew, null)

        assert.deepStrictEqual(yield* migrate({ shards: 4, nowMs: 0 }), MIGRATIONS.filter((m) => m.version >= 9).map((m) => m.version))
        const rows = yield* sql<{ name: string; signing_secret: string; previous_signing_secret: string | null }>`
          SELECT name, signing_secret, previous_signing_secret FROM projects ORDER BY name`
        assert.deepStrictEqual(rows, [
          { name: "converted-already", signing_secret: alreadyNew, previous_signing_secret: null },
          { name: "rotating", signing_secret: standardFormOfLegacySecret(oldCurrent), previous_signing_secret: standardFormOfLegacySecret(oldPrevious) }
        ])
        yield* sql`INSERT INTO projects (id, name, monthly_quota, retry_policy, created_at, updated_at)
          VALUES (${crypto.randomUUID()}, 'by-default', 10, '{}'::jsonb, now(), now())`
        const [created] = yield* sql<{ signing_secret: string }>`SELECT signing_secret FROM projects WHERE name = 'by-default'`
        assert.match(created!.signing_secret, SIGNING_SECRET_PATTERN)
      }))
  })
})
