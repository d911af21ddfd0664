/**
 * Batches of one statement written a few at a time: COPY FROM, INSERT … SELECT and ADD PRIMARY KEY's
 * rebuild hand each batch here and go on producing the next, waiting only while `max` are under way.
 * The first failure is kept and thrown by the next add() or by drain(), so no batch's rejection goes
 * unhandled and none is silently lost.
 */
export class WritePipeline {
  private readonly inFlight: Array<Promise<void>> = [];
  private failure: { error: unknown } | undefined;

  constructor(private readonly max: number) {}

  /** Start waiting on `write`; returns once fewer than `max` are under way (throws an earlier failure). */
  async add(write: Promise<unknown>): Promise<void> {
    this.throwIfFailed();
    this.inFlight.push(write.then(() => undefined, (e: unknown) => void (this.failure ??= { error: e })));
    while (this.inFlight.length >= this.max) await this.inFlight.shift();
    this.throwIfFailed();
  }

  /** Wait for every batch under way, then throw the first failure if there was one. */
  async drain(): Promise<void> {
    await this.settle();
    this.throwIfFailed();
  }

  /** Wait for every batch under way, whatever their outcomes (before clean-up after another error). */
  async settle(): Promise<void> {
    while (this.inFlight.length > 0) await this.inFlight.shift();
  }

  throwIfFailed(): void {
    if (this.failure) throw this.failure.error;
  }
}
