// The project default retry policy every new project starts with (SPEC "Project retry policy"),
// in the field names of the API view.
export const PROJECT_DEFAULT_RETRY_VIEW = {
  retryStrategy: "exponential",
  retryMaxAttempts: 3,
  retryInitialDelaySeconds: 30,
  retryMaxDelaySeconds: null,
  retryJitter: false,
  retryOn: "network_only"
} as const
