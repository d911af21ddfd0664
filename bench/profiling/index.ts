/**
 * The profiling kit (docs/benchmarks.md, the `profile` section): CPU-profile summaries by area, flame graphs,
 * and the per-second busy timeline of the servers' event loops. `tessera bench profile` is its entry
 * point (profile-section.ts); `bench --vs etcd --profile` uses the same parts.
 */
export { runProfileSection, parseProfileArgs } from './profile-section';
export { summarizeProfileFile, summarizeCpuProfile, parseCpuProfile, renderProfileSummary, type CpuProfile } from './cpu-profile-summary';
export { writeFlameGraphs } from './flame-graph';
export { analyzeBusy, MainThreadCpuSampler, renderBusyTimeline, type BusyWindow, type ProfiledServer, type ThreadCpuSamples } from './busy-timeline';
export { profileWhile } from './profile-while';
