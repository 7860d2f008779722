// The lines `npm start` prints once it listens (domain/firstSteps.ts), from the database's state.
import * as Effect from "effect/Effect"
import { dashboardUrl, firstSteps } from "../domain/firstSteps.ts"
import { setupStateRead } from "../store/setupReads.ts"
import { orUnavailable } from "../store/unavailable.ts"

export const startupGuidance = (host: string, port: number) =>
  orUnavailable(Effect.map(setupStateRead(), (state) => firstSteps(state, dashboardUrl(host, port))))
