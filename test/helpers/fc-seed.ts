/**
 * fast-check run parameters shared by the property tests. The suite runs one fixed seed, so a CI run is
 * reproducible and a failure names a case anyone can replay; `FC_SEED=<n>` replays another run and
 * `FC_SEED=random` explores new cases (fast-check prints the seed of a failing run). `FC_RUNS=<n>`
 * multiplies the number of cases for a longer exploration.
 */
const DEFAULT_SEED = 20261126;

export function fcParams(numRuns: number): { numRuns: number; seed?: number } {
  const raw = process.env.FC_SEED;
  const factor = Math.max(1, Number(process.env.FC_RUNS ?? '1') || 1);
  const runs = numRuns * factor;
  if (raw === 'random') return { numRuns: runs };
  return { numRuns: runs, seed: raw !== undefined && raw !== '' ? Number(raw) : DEFAULT_SEED };
}
