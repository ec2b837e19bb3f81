import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import { DatabaseBusyError, openDatabase } from './db/database.js';
import { LocalMediaStorage } from './media/local-storage.js';

/**
 * A backup of an installation on the embedded database: one gzip file holding a first line that names
 * the format, then records, each a 4-byte length, a JSON header (`{ kind, path?, size }`) and `size`
 * bytes: the database (PGlite's `dumpDataDir`, a tar of its data directory) and each local media file.
 * The encryption keys are not in it.
 */
const MAGIC = 'post-scheduler backup 1\n';

interface Entry {
  kind: 'database' | 'media' | 'end';
  /** A media file's path under DATA_DIR/media, with `/` between its parts. */
  path?: string;
  size: number;
}

export class BackupError extends Error {
  override name = 'BackupError';
}

const DATABASE_DIR = 'pglite';
const MEDIA_DIR = 'media';

function hasDatabase(dataDir: string): boolean {
  return fs.existsSync(path.join(dataDir, DATABASE_DIR, 'PG_VERSION'));
}

/** Writes a backup of DATA_DIR's embedded database and local media files to `file`; what it wrote. */
export async function backup(dataDir: string, file: string): Promise<string> {
  if (!hasDatabase(dataDir)) throw new BackupError(`There is no embedded database in ${dataDir} to back up.`);
  if (fs.existsSync(file)) throw new BackupError(`${file} already exists: name a new file.`);
  let database;
  try {
    // Holding the database's lock keeps the server from starting (or from running) meanwhile, so the
    // database and the media files are copied as one moment.
    database = await openDatabase({ dataDir });
  } catch (error) {
    if (error instanceof DatabaseBusyError) {
      throw new DatabaseBusyError(
        `${error.message}\nA backup copies the embedded database while nothing else uses it: stop the server ` +
          '(and any other process on this DATA_DIR) first, then run the backup again.',
      );
    }
    throw error;
  }
  const partial = `${file}.partial-${randomBytes(6).toString('hex')}`;
  try {
    const dump = await database.pglite!.dumpDataDir('none');
    const media = await mediaFiles(path.join(dataDir, MEDIA_DIR));
    await pipeline(
      Readable.from(records(dump, dataDir, media)),
      createGzip(),
      fs.createWriteStream(partial, { flags: 'wx' }),
    );
    await fsp.rename(partial, file);
    return (
      `Backed up the embedded database and ${media.length} media files to ${file}. ` +
      'The encryption keys are not in it: keep them (ENCRYPTION_KEY or DATA_DIR/encryption-keys) to restore it.'
    );
  } catch (error) {
    await fsp.rm(partial, { force: true });
    throw error;
  } finally {
    await database.close();
  }
}

function header(entry: Entry): Buffer {
  const json = Buffer.from(JSON.stringify(entry));
  const length = Buffer.alloc(4);
  length.writeUInt32BE(json.length);
  return Buffer.concat([length, json]);
}

async function* records(dump: Blob, dataDir: string, media: string[]): AsyncGenerator<Buffer> {
  yield Buffer.from(MAGIC);
  yield header({ kind: 'database', size: dump.size });
  yield Buffer.from(await dump.arrayBuffer());
  for (const relative of media) {
    const file = path.join(dataDir, MEDIA_DIR, ...relative.split('/'));
    const size = (await fsp.stat(file)).size;
    yield header({ kind: 'media', path: relative, size });
    let written = 0;
    for await (const chunk of fs.createReadStream(file, { end: Math.max(size - 1, 0) })) {
      const bytes = chunk as Buffer;
      written += bytes.length;
      yield bytes;
    }
    if (written !== size) throw new BackupError(`${file} changed while it was being backed up.`);
  }
  yield header({ kind: 'end', size: 0 });
}

/**
 * The media files under `root`, as paths with `/`: those named as media storage keys, so uploads still
 * being written (`.partial/…`) and files that are not media are left out.
 */
async function mediaFiles(root: string): Promise<string[]> {
  if (!fs.existsSync(root)) return [];
  const entries = await fsp.readdir(root, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'))
    .filter((relative) => LocalMediaStorage.isKey(relative))
    .sort();
}

/** Reads exact numbers of bytes from a stream. */
class ByteReader {
  private buffered: Buffer[] = [];
  private length = 0;
  private readonly chunks: AsyncIterator<Buffer>;

  constructor(stream: AsyncIterable<Buffer>) {
    this.chunks = stream[Symbol.asyncIterator]();
  }

  async read(size: number): Promise<Buffer> {
    while (this.length < size) {
      const next = await this.chunks.next();
      if (next.done) throw new BackupError('The backup ends too early: it is cut or damaged.');
      this.buffered.push(next.value);
      this.length += next.value.length;
    }
    const all = Buffer.concat(this.buffered);
    this.buffered = [all.subarray(size)];
    this.length = all.length - size;
    return all.subarray(0, size);
  }

  /** Up to `size` bytes at a time, `size` in all (for a large file). */
  async *pieces(size: number): AsyncGenerator<Buffer> {
    let left = size;
    while (left > 0) {
      const piece = await this.read(Math.min(left, 1 << 20));
      left -= piece.length;
      yield piece;
    }
  }

  async atEnd(): Promise<boolean> {
    if (this.length > 0) return false;
    for (;;) {
      const next = await this.chunks.next();
      if (next.done) return true;
      if (next.value.length > 0) return false;
    }
  }
}

async function readEntry(reader: ByteReader): Promise<Entry> {
  const length = (await reader.read(4)).readUInt32BE();
  if (length > 64 * 1024) throw new BackupError('The backup is damaged (an entry header is too long).');
  let entry: Entry;
  try {
    entry = JSON.parse((await reader.read(length)).toString('utf8')) as Entry;
  } catch {
    throw new BackupError('The backup is damaged (an entry header is not readable).');
  }
  const known =
    (entry.kind === 'database' || entry.kind === 'end' || entry.kind === 'media') &&
    Number.isSafeInteger(entry.size) &&
    entry.size >= 0 &&
    (entry.kind !== 'media' || (typeof entry.path === 'string' && LocalMediaStorage.isKey(entry.path)));
  if (!known) throw new BackupError('The backup is damaged (an entry is not one this version knows).');
  return entry;
}

/**
 * Restores a backup into DATA_DIR, which must hold no database and no media files yet. Nothing is left
 * in DATA_DIR when the backup turns out damaged.
 */
export async function restore(dataDir: string, file: string): Promise<string> {
  if (!fs.existsSync(file)) throw new BackupError(`There is no file ${file}.`);
  const databaseDir = path.join(dataDir, DATABASE_DIR);
  const mediaDir = path.join(dataDir, MEDIA_DIR);
  if (hasDatabase(dataDir) || nonEmpty(databaseDir)) {
    throw new BackupError(
      `${dataDir} already holds an embedded database: restore into an empty DATA_DIR ` +
        '(set DATA_DIR to a new directory, or move this one away first).',
    );
  }
  if (nonEmpty(mediaDir)) {
    throw new BackupError(`${mediaDir} already holds media files: restore into an empty DATA_DIR.`);
  }
  fs.mkdirSync(dataDir, { recursive: true });
  const staging = path.join(dataDir, `restoring-${randomBytes(6).toString('hex')}`);
  let databaseWritten = false;
  try {
    const reader = new ByteReader(fs.createReadStream(file).pipe(createGunzip()));
    let magic: Buffer;
    try {
      magic = await reader.read(MAGIC.length);
    } catch {
      throw new BackupError(`${file} is not a backup made by \`npm run admin -- backup\`.`);
    }
    if (magic.toString('latin1') !== MAGIC) {
      throw new BackupError(`${file} is not a backup made by \`npm run admin -- backup\` (or one of a newer format).`);
    }
    let dump: Buffer | undefined;
    let media = 0;
    for (;;) {
      const entry = await readEntry(reader);
      if (entry.kind === 'end') break;
      if (entry.kind === 'database') {
        if (dump) throw new BackupError('The backup is damaged (it holds two databases).');
        dump = await reader.read(entry.size);
        continue;
      }
      const target = path.join(staging, ...entry.path!.split('/'));
      await fsp.mkdir(path.dirname(target), { recursive: true });
      await pipeline(Readable.from(reader.pieces(entry.size)), fs.createWriteStream(target, { flags: 'wx' }));
      media += 1;
    }
    if (!(await reader.atEnd())) throw new BackupError('The backup is damaged (it goes on after its end).');
    if (!dump) throw new BackupError('The backup is damaged (it holds no database).');
    let database;
    try {
      database = await openDatabase({ dataDir, initialData: new Blob([dump]) });
    } catch (error) {
      // Another process holds the directory: what is in it is not this restore's to remove.
      databaseWritten = !(error instanceof DatabaseBusyError);
      throw error;
    }
    await database.close();
    if (!hasDatabase(dataDir)) throw new BackupError('The backup is damaged (its database could not be restored).');
    if (fs.existsSync(staging)) {
      fs.rmSync(mediaDir, { recursive: true, force: true });
      await fsp.rename(staging, mediaDir);
    }
    return (
      `Restored the embedded database and ${media} media files into ${dataDir}. ` +
      'Start the server with the same encryption keys as the installation that was backed up.'
    );
  } catch (error) {
    await fsp.rm(staging, { recursive: true, force: true });
    if (databaseWritten) await fsp.rm(databaseDir, { recursive: true, force: true });
    if (isZlibError(error))
      throw new BackupError(`${file} is not a backup, or it is damaged (${(error as Error).message}).`);
    throw error;
  }
}

function nonEmpty(directory: string): boolean {
  try {
    return fs.readdirSync(directory).some((name) => !name.startsWith('.'));
  } catch {
    return false;
  }
}

function isZlibError(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' && code.startsWith('Z_');
}
