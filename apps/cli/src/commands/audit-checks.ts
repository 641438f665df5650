/**
 * What audit warns about before a migrate fails: not enough free space on a filesystem it writes
 * (the data's, the backups'), Kafka leftovers migrate refuses to swap beside, and magic 0/1 data
 * that only the active (or a still changing) segment holds, which a plain migrate leaves alone.
 */
import { stat, statfs } from 'node:fs/promises';
import path from 'node:path';
import { kafkaLeftovers } from '@seglift/segment';
import { count, formatBytes } from '../table.js';

/** Where a filesystem check looks: the nearest existing directory (a backup dir may not exist yet). */
async function existingAncestor(dir: string): Promise<string> {
  let d = path.resolve(dir);
  for (;;) {
    if (
      await stat(d).then(
        () => true,
        () => false,
      )
    )
      return d;
    const up = path.dirname(d);
    if (up === d) return d;
    d = up;
  }
}

/**
 * The device of `dir` and the bytes an unprivileged writer may still use on it (df's Avail);
 * undefined where the filesystem does not say (no figure is better than a wrong one).
 */
export async function filesystemOf(dir: string): Promise<{ dev: number; freeBytes: number } | undefined> {
  try {
    const at = await existingAncestor(dir);
    const [st, fs] = await Promise.all([stat(at), statfs(at)]);
    return { dev: st.dev, freeBytes: fs.bavail * fs.bsize };
  } catch {
    return undefined;
  }
}

/** One filesystem a migrate writes on: what it needs there, what is free, and for what. */
export interface SpaceCheck {
  /** The data's directory on it (or the backup dir). */
  dir: string;
  /** `data`, `backups`, or `data and backups`. */
  holds: string;
  /** A plain migrate's need while it runs (0 on a backup-only filesystem). */
  migrateBytes: number;
  /** The backups written there (0 without --backup-dir, or when they go elsewhere). */
  backupBytes: number;
  needBytes: number;
  freeBytes: number;
  enough: boolean;
}

/**
 * Compares each filesystem's need (audit's disk figures, `peakExtraBytes` per data filesystem,
 * plus every backup when the backup dir shares it) with its free space now.
 */
export async function spaceChecks(
  disks: readonly { dir: string; peakExtraBytes: number; backupBytes: number }[],
  backupDir: string | undefined,
): Promise<SpaceCheck[]> {
  const backupTotal = disks.reduce((n, d) => n + d.backupBytes, 0);
  const backupFs = backupDir === undefined ? undefined : await filesystemOf(backupDir);
  const checks: SpaceCheck[] = [];
  let backupsPlaced = backupFs === undefined;
  for (const d of disks) {
    const fs = await filesystemOf(d.dir);
    if (fs === undefined) continue;
    const withBackups = backupFs !== undefined && backupFs.dev === fs.dev && !backupsPlaced;
    if (withBackups) backupsPlaced = true;
    const backupBytes = withBackups ? backupTotal : 0;
    const needBytes = d.peakExtraBytes + backupBytes;
    checks.push({
      dir: d.dir,
      holds: withBackups ? 'data and backups' : 'data',
      migrateBytes: d.peakExtraBytes,
      backupBytes,
      needBytes,
      freeBytes: fs.freeBytes,
      enough: needBytes <= fs.freeBytes,
    });
  }
  if (!backupsPlaced && backupFs !== undefined && backupDir !== undefined)
    checks.push({
      dir: backupDir,
      holds: 'backups',
      migrateBytes: 0,
      backupBytes: backupTotal,
      needBytes: backupTotal,
      freeBytes: backupFs.freeBytes,
      enough: backupTotal <= backupFs.freeBytes,
    });
  return checks;
}

/**
 * `free space (/var/lib/kafka/data, data): 1.2 GiB free, migrate needs 30.3 KiB: enough.` or
 * `free space (/backup, backups): NOT ENOUGH: 15.0 MiB free, migrate needs 29.1 MiB (...)`.
 */
export function spaceLine(c: SpaceCheck): string {
  const parts = [
    c.migrateBytes > 0 ? `${formatBytes(c.migrateBytes)} while it runs` : '',
    c.backupBytes > 0 ? `${formatBytes(c.backupBytes)} of backups` : '',
  ].filter(Boolean);
  const need = `migrate needs ${formatBytes(c.needBytes)}${parts.length > 1 ? ` (${parts.join(' + ')})` : ''}`;
  if (c.enough)
    return `free space (${c.dir}, ${c.holds}): ${formatBytes(c.freeBytes)} free, ${need}: enough.`;
  const fix =
    c.holds === 'backups'
      ? 'free space there or choose another --backup-dir'
      : c.backupBytes > 0
        ? 'free space there, put --backup-dir on another filesystem, or lower --concurrency'
        : 'free space there, lower --concurrency, or migrate fewer partitions at a time';
  return (
    `free space (${c.dir}, ${c.holds}): NOT ENOUGH: ${formatBytes(c.freeBytes)} free, ${need}, ` +
    `${formatBytes(c.needBytes - c.freeBytes)} short: ${fix}; a migrate would fail with ENOSPC part way.`
  );
}

/**
 * `migrate --prepare`'s stage lies on the log dir's filesystem (the commit links its files in):
 * its need against that filesystem's free space, said after audit's stage line.
 */
export function stageSpaceNote(stageBytes: number, checks: readonly SpaceCheck[]): string {
  const data = checks.filter((c) => c.holds !== 'backups');
  if (data.length !== 1) return '';
  const free = data[0].freeBytes;
  return stageBytes <= free
    ? ` Its filesystem (the log dir's) has ${formatBytes(free)} free: enough.`
    : ` Its filesystem (the log dir's) has ${formatBytes(free)} free: NOT ENOUGH for --prepare (${formatBytes(stageBytes - free)} short).`;
}

/** The files of an interrupted Kafka operation in a partition (`.cleaned`, a `.swap` not ours). */
export async function kafkaLeftoverFiles(partitionDir: string): Promise<string[]> {
  const found = await kafkaLeftovers(partitionDir).catch(() => ({ cleaned: [], foreignSwaps: [] }));
  return [...found.cleaned, ...found.foreignSwaps];
}

/**
 * `KAFKA_LEFTOVERS in orders-0: ...` for a partition migrate would refuse (it has segments to
 * rewrite), with the fix; a partition with nothing to rewrite only gets a note.
 */
export function leftoversLine(name: string, files: readonly string[], blocksMigrate: boolean): string {
  const what = `${name} holds files of an interrupted Kafka operation (${files.join(', ')})`;
  return blocksMigrate
    ? `KAFKA_LEFTOVERS: ${what}: migrate refuses to convert its segments (error[KAFKA_LEFTOVERS]). ` +
        'Start the broker once and stop it cleanly: it finishes them at start-up; then audit again.'
    : `note: ${what}; migrate has nothing to rewrite there. The broker finishes them at its next start.`;
}

/**
 * For NOT READY: the magic 0/1 segments a plain migrate leaves alone, each named, and what finishes
 * the job: `--include-active` with the broker stopped, or a migrate once the broker has rolled them.
 */
export function leftAloneLegacyLines(
  segments: readonly string[],
  dirs: readonly string[],
  archive: { quietMs: number } | undefined,
  max = 10,
): string[] {
  if (segments.length === 0) return [];
  const n = segments.length;
  const shown = segments.slice(0, max).map((s) => `  ${s}`);
  if (n > max) shown.push(`  ... and ${n - max} more`);
  if (archive)
    return [
      `${count(n, 'segment holding', 'segments holding')} magic 0/1 data ${n === 1 ? 'was' : 'were'} written within the last ${archive.quietMs} ms, and migrate takes ${n === 1 ? 'it' : 'them'} once unchanged that long:`,
      ...shown,
    ];
  return [
    `${count(n, 'active segment holds', 'active segments hold')} magic 0/1 data; migrate leaves ${n === 1 ? 'it' : 'them'} alone (a running broker appends to ${n === 1 ? 'it' : 'them'}):`,
    ...shown,
    `To finish: with the broker stopped, 'seglift migrate ${dirs.join(' ')} --include-active'; or, once the broker has rolled ${n === 1 ? 'it' : 'them'} (segment.ms, segment.bytes), 'seglift migrate' again (or --prepare/--commit).`,
  ];
}
