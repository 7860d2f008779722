// Every route of the dashboard (docs/dashboard.md): its pages, sign-in, and its own endpoints (keys, alerts,
// overview, cancel by id: POST /jobs/{id}/cancel). The shared endpoints it also calls (/jobs, /executions, /tag-policies,
// /project/retry-policy, /declare, /bulk) take its session through api/auth.ts `authenticate`.
import * as Layer from "effect/Layer"
import { AlertRoutes } from "./alerts.ts"
import { DashboardPageRoutes } from "./dashboardPages.ts"
import { KeyRoutes } from "./keys.ts"
import { OverviewRoutes } from "./overview.ts"
import { SessionRoutes } from "./sessionRoutes.ts"

export const DashboardRoutes = Layer.mergeAll(DashboardPageRoutes, SessionRoutes, KeyRoutes, AlertRoutes, OverviewRoutes)
