/**
 * The ids of a client's writes as retryable requests: one random client id per client instance, and
 * increasing request ids. A request id is running from its first attempt until the client stops
 * waiting for its answer; every request carries the lowest running id (min_running), below which the
 * tablets forget this client's requests — the client will never resend those.
 */
import { randomBytes } from 'node:crypto';

export class RequestIds {
  readonly clientId = randomBytes(12).toString('hex');
  private next = 1;
  /** No running id is below this (advanced lazily). */
  private low = 1;
  private readonly running = new Set<number>();

  begin(): number {
    const id = this.next++;
    this.running.add(id);
    return id;
  }

  end(id: number): void {
    this.running.delete(id);
  }

  /** The lowest running id (the next id to be taken when none runs). */
  minRunning(): number {
    while (this.low < this.next && !this.running.has(this.low)) this.low++;
    return this.low;
  }

  /** Ids running now (tests, diagnostics). */
  get runningCount(): number {
    return this.running.size;
  }
}
