/**
 * A V8 CPU profile of this process while `f` runs, written to `file` (a `.cpuprofile`, what
 * `node --cpu-prof` writes, so `npm run bench profile FILE` summarises it): for a benchmark that
 * wants one phase of its own process profiled, not its whole life.
 */
import * as fs from 'node:fs';
import { Session } from 'node:inspector';

function post<T>(s: Session, method: string, params?: object): Promise<T> {
  return new Promise((res, rej) => s.post(method, params ?? {}, (err, r) => (err ? rej(err) : res(r as T))));
}

export async function profileWhile<T>(file: string, f: () => Promise<T>): Promise<T> {
  const s = new Session();
  s.connect();
  try {
    await post(s, 'Profiler.enable');
    await post(s, 'Profiler.start');
    try {
      return await f();
    } finally {
      const { profile } = await post<{ profile: object }>(s, 'Profiler.stop');
      fs.writeFileSync(file, JSON.stringify(profile));
    }
  } finally {
    s.disconnect();
  }
}
