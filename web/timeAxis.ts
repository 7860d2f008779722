// The time axis of the dashboard's charts (docs/dashboard.md): labels that cannot be misread — `HH:MM`
// within a day, and at midnight the date itself (`Jan 2`), never a month-day pair such as `05-01` that
// reads like a time. All in UTC, as the service's times are. No DOM: the tests import it.
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
const pad = (n: number) => String(n).padStart(2, "0")

/** The label of a tick at `seconds` (UTC). */
export const timeLabel = (seconds: number): string => {
  const d = new Date(seconds * 1000)
  const hours = d.getUTCHours()
  const minutes = d.getUTCMinutes()
  return hours === 0 && minutes === 0 ? `${MONTHS[d.getUTCMonth()]} ${d.getUTCDate()}` : `${pad(hours)}:${pad(minutes)}`
}

/** The legend's full time of a point: `2030-01-02 11:15 UTC`. */
export const pointLabel = (seconds: number): string =>
  `${new Date(seconds * 1000).toISOString().slice(0, 16).replace("T", " ")} UTC`

/** How a bucket width is named in a chart's title: `minute`, `5 minutes`, `15 minutes`. */
export const bucketName = (seconds: number): string => (seconds === 60 ? "minute" : `${seconds / 60} minutes`)
