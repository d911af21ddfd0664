/**
 * The environment a tessera server process (master, tserver) starts with: its launcher's, plus glibc
 * malloc settings that keep large freed blocks for reuse (docs/raft-write-path.md, "Large values").
 * By default glibc serves blocks above a threshold with fresh mappings and gives freed memory back
 * to the kernel, so a stream of 1 MiB values (the blog's INSERT: the RocksDB binding's copies of each
 * value, WebSocket frames, protobuf buffers) was faulted in page by page, again and again. The
 * settings are read by glibc when the process starts, so they must be in the environment it is
 * started with; a variable the launcher already sets wins. Cost: a server may keep up to
 * MALLOC_TRIM_THRESHOLD_ of freed memory mapped instead of returning it.
 */
export const SERVER_MALLOC_ENV: Readonly<Record<string, string>> = {
  /** Blocks below 64 MiB come from the heap, where freed ones are reused (default: 128 KiB, adapting). */
  MALLOC_MMAP_THRESHOLD_: String(64 << 20),
  /** Free memory at the top of the heap is returned to the kernel only beyond 1 GiB. */
  MALLOC_TRIM_THRESHOLD_: String(1 << 30),
  /** The heap grows 64 MiB beyond each request, so growing takes fewer system calls. */
  MALLOC_TOP_PAD_: String(64 << 20),
};

/** `base` (default this process's environment) with SERVER_MALLOC_ENV under it. */
export function serverEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return { ...SERVER_MALLOC_ENV, ...base };
}
