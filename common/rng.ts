/** Seeded randomness. Simulation and Raft never call Math.random(); they receive an Rng. */
export interface Rng {
  /** Uniform float in [0, 1). */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
  /** True with probability p. */
  chance(p: number): boolean;
}

/** splitmix32-based generator: tiny, fast, and reproducible across platforms. */
export class SeededRng implements Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    this.state = (this.state + 0x9e3779b9) >>> 0;
    let z = this.state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    z = (z ^ (z >>> 16)) >>> 0;
    return z / 0x100000000;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  /** A new independent stream derived from this one (for per-node generators). */
  fork(): SeededRng {
    return new SeededRng(this.int(0xffffffff));
  }
}

export class MathRng implements Rng {
  next(): number {
    return Math.random();
  }
  int(n: number): number {
    return Math.floor(Math.random() * n);
  }
  chance(p: number): boolean {
    return Math.random() < p;
  }
}
