/**
 * Ctrl-C as a cancellation: for the commands whose jobs resume (extract, eval, attend, ablate)
 * and for the analyses that write once, at the end (wanda, cluster, swap).
 *
 * The first SIGINT or SIGTERM aborts the command's AbortSignal: a job stops before its next
 * chunk, releases its lock and leaves its folder as a kill would, so the same command again
 * resumes it; an analysis stops at its next stage boundary and writes nothing. The command then fails with E_ABORTED and exits 130 (SIGINT) or 143 (SIGTERM), the
 * shell's codes for a process ended by that signal. A second signal ends the process at once,
 * for a user who will not wait for the chunk in progress; that too leaves the folder resumable.
 */

/** The signal that interrupted the command running now, if one did. */
let received: NodeJS.Signals | null = null;
/** The handlers this module has put on the process, until releaseInterrupts takes them off. */
const installed: ((signal: NodeJS.Signals) => void)[] = [];

/** The exit code of a process ended by `signal` (128 + its number). */
function signalExit(signal: NodeJS.Signals): number {
  return signal === 'SIGTERM' ? 143 : 130;
}

/**
 * An AbortSignal that SIGINT and SIGTERM abort, for the job `command` is about to run, until the
 * command ends (cli/main.ts calls releaseInterrupts then, so a process that runs commands in turn,
 * a test runner's, keeps its own signal handling). A note on stderr says what happens (always: a
 * user pressing Ctrl-C should see that it was heard).
 */
export function interruptSignal(command: string): AbortSignal {
  const ctl = new AbortController();
  const on = (signal: NodeJS.Signals) => {
    if (received) {
      process.stderr.write(
        `lobes ${command}: stopped at once (${signal}); the same command again resumes from the last finished chunk\n`,
      );
      process.exit(signalExit(received));
    }
    received = signal;
    process.stderr.write(
      `lobes ${command}: interrupted (${signal}); stopping before the next chunk (press Ctrl-C again to stop at once)\n`,
    );
    ctl.abort(`interrupted by ${signal}`);
  };
  process.on('SIGINT', on);
  process.on('SIGTERM', on);
  installed.push(on);
  return ctl.signal;
}

/** The exit code for a failure: 130 / 143 when a signal interrupted the job, else `code`. */
export function interruptedExitCode(code: number): number {
  return received ? signalExit(received) : code;
}

/** Take this module's handlers off the process and forget any signal received (at a command's end). */
export function releaseInterrupts(): void {
  for (const on of installed.splice(0)) {
    process.off('SIGINT', on);
    process.off('SIGTERM', on);
  }
  received = null;
}
