/**
 * The frontend messages a connection has received and not yet handled. A client may send far ahead
 * of the server — a COPY's CopyData messages, a pipelined batch of extended-protocol messages — so
 * the queue takes from its head in O(1) (an array's shift() is O(n): a million queued CopyData
 * messages made COPY quadratic), and it stops reading the socket while it holds more than
 * QUEUED_MESSAGES_HIGH messages or QUEUED_BYTES_HIGH bytes, reading on again below half of both,
 * so a fast sender waits in TCP's flow control instead of in this process's memory.
 */
export const QUEUED_MESSAGES_HIGH = 4096;
export const QUEUED_BYTES_HIGH = 8 * 1024 * 1024;

export interface Flow {
  pause(): void;
  resume(): void;
}

export class MessageQueue<T> {
  private items: Array<T | undefined> = [];
  private head = 0;
  private bytes = 0;
  private paused = false;

  constructor(private readonly flow: Flow, private readonly sizeOf: (m: T) => number) {}

  get length(): number {
    return this.items.length - this.head;
  }

  push(m: T): void {
    this.items.push(m);
    this.bytes += this.sizeOf(m);
    if (!this.paused && (this.length > QUEUED_MESSAGES_HIGH || this.bytes > QUEUED_BYTES_HIGH)) {
      this.paused = true;
      this.flow.pause();
    }
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const m = this.items[this.head]!;
    this.items[this.head++] = undefined;
    this.bytes -= this.sizeOf(m);
    // Drop the consumed prefix once it is most of the array (amortised O(1) per message).
    if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    if (this.paused && this.length <= QUEUED_MESSAGES_HIGH / 2 && this.bytes <= QUEUED_BYTES_HIGH / 2) {
      this.paused = false;
      this.flow.resume();
    }
    return m;
  }
}
