/**
 * Servers a benchmark started are its children, but not in its process group's fate: when the
 * benchmark dies of SIGINT/SIGTERM/SIGHUP (Ctrl-C, `timeout`, a test's kill) they would keep running
 * on their ports and hold their temp data. A guard kills them synchronously on those signals and on
 * exit, then lets the signal end the process as it would have.
 */
const EXIT_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** Run killNow on a terminating signal or exit; the returned function removes the guard. */
export function guardChildren(killNow: () => void): () => void {
  const remove = (): void => {
    for (const sig of EXIT_SIGNALS) process.removeListener(sig, onSignal);
    process.removeListener('exit', onExit);
  };
  const onSignal = (sig: NodeJS.Signals): void => {
    remove();
    killNow();
    // With no listener left (unless another guard still holds), the signal's default action ends us.
    if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
  };
  const onExit = (): void => {
    remove();
    killNow();
  };
  for (const sig of EXIT_SIGNALS) process.on(sig, onSignal);
  process.on('exit', onExit);
  return remove;
}
