// The password of `admin create` typed at a terminal (docs/settings.md "CLI"): asked twice, never
// echoed (the terminal in raw mode, nothing written back but the prompt), on stderr so stdout keeps
// only the command's result. Backspace erases, Enter ends, Ctrl-C or Ctrl-D gives up. A password too
// short or two answers that differ are asked again, three times at most. Piped stdin and `--password`
// never come here (cli/main.ts).

/** The terminal the prompt reads: Node's stdin when it is a TTY. */
export interface Terminal {
  readonly isTTY?: boolean
  setRawMode(raw: boolean): unknown
  setEncoding(encoding: BufferEncoding): unknown
  on(event: "data", listener: (chunk: string) => void): unknown
  off(event: "data", listener: (chunk: string) => void): unknown
  resume(): unknown
  pause(): unknown
}

export interface Output {
  write(text: string): unknown
}

/** Given up: Ctrl-C, or Ctrl-D before Enter. */
export class PromptAborted extends Error {
  override readonly name = "PromptAborted"
}

const CTRL_C = "\u0003"
const CTRL_D = "\u0004"
const BACKSPACES = new Set(["\u007f", "\b"])

/** One answer read without echo. */
export const readHidden = (question: string, input: Terminal, output: Output): Promise<string> =>
  new Promise((resolve, reject) => {
    // raw before the prompt shows: keys typed as soon as it appears are never echoed
    input.setEncoding("utf8")
    input.setRawMode(true)
    output.write(question)
    let answer = ""
    const finish = (result: () => void) => {
      input.off("data", onData)
      input.setRawMode(false)
      input.pause()
      output.write("\n")
      result()
    }
    const onData = (chunk: string) => {
      for (const character of chunk) {
        if (character === "\r" || character === "\n") return finish(() => resolve(answer))
        if (character === CTRL_C || (character === CTRL_D && answer === "")) return finish(() => reject(new PromptAborted("no password given")))
        if (BACKSPACES.has(character)) answer = [...answer].slice(0, -1).join("")
        else if (character >= " ") answer += character
      }
    }
    input.on("data", onData)
    input.resume()
  })

const ATTEMPTS = 3

/**
 * A new password: asked, then asked again to confirm; too short (under `minLength`) or different
 * answers are asked anew, at most three times, then the last problem is the failure.
 */
export const promptNewPassword = async (email: string, minLength: number, input: Terminal, output: Output): Promise<string> => {
  let problem = ""
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    const password = await readHidden(`Password for ${email} (at least ${minLength} characters): `, input, output)
    if (password.length < minLength) {
      problem = `the password must have at least ${minLength} characters`
    } else if ((await readHidden("Repeat the password: ", input, output)) !== password) {
      problem = "the two passwords differ"
    } else {
      return password
    }
    if (attempt < ATTEMPTS) output.write(`${problem}: try again\n`)
  }
  throw new PromptAborted(problem)
}
