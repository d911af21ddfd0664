import { describe, expect, it } from 'vitest';
import { EVENT_LOOP_MONITOR_MS, Metrics } from '../../rpc/metrics';

/** One scrape (every collect hook runs, as for /prometheus-metrics): gauge name → value. */
async function scrape(m: Metrics): Promise<Map<string, number>> {
  const all = await m.registry.getMetricsAsJSON();
  return new Map(all.filter((x) => x.values.length > 0).map((x) => [x.name, x.values[0]!.value]));
}

describe('metrics: Node process metrics', () => {
  it('the event-loop lag monitor samples every 100 ms (not every 10: 100 wake-ups a second of an idle server) and still records a stall', async () => {
    const m = new Metrics({ processMetrics: true });
    await new Promise((r) => setTimeout(r, 3 * EVENT_LOOP_MONITOR_MS)); // the scenario: the monitor takes its samples
    await scrape(m); // (a scrape resets the monitor's histogram)
    await new Promise((r) => setTimeout(r, 3 * EVENT_LOOP_MONITOR_MS)); // the scenario: the monitor takes its samples
    const stallMs = 400;
    const until = performance.now() + stallMs;
    while (performance.now() < until) {
      // Busy: the loop cannot run the monitor's timer.
    }
    await new Promise((r) => setTimeout(r, 2 * EVENT_LOOP_MONITOR_MS)); // the scenario: the monitor takes its samples
    const g = await scrape(m);
    // The monitor records the time between its samples: at least its resolution, and the stall.
    expect(g.get('nodejs_eventloop_lag_min_seconds')).toBeGreaterThan(0.09);
    expect(g.get('nodejs_eventloop_lag_max_seconds')).toBeGreaterThan(stallMs / 1000);
  });
});
