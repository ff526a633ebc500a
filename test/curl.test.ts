// curl, a client nobody here wrote, through the whole transfer: upload into another user's
// area with a Bearer token, that user lists it and downloads it byte-identical, resuming an
// interrupted download with Range (`curl -C -`).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { bytes } from './helpers/files.js';
import { closeAll, startTestServer, type TestServer } from './helpers/server.js';

const run = promisify(execFile);
const curlAvailable = await run('curl', ['--version']).then(
  () => true,
  () => false,
);
const CURL_SKIP = 'curl is not installed: curl client tests skipped (apt-get install -y curl)';

async function curl(...args: string[]): Promise<string> {
  const { stdout } = await run('curl', ['-sS', '--fail-with-body', ...args], { maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

describe('curl as the client', { skip: curlAvailable ? false : CURL_SKIP }, () => {
  let t: TestServer;
  let dir: string;
  before(async () => {
    t = await startTestServer();
    dir = await mkdtemp(path.join(tmpdir(), 'remessa-curl-'));
    await t.createUser('sender', 'sender-password');
    await t.createUser('receiver', 'receiver-password');
  });
  after(async () => {
    await closeAll(t, () => rm(dir, { recursive: true, force: true }));
  });

  test('a wrong password with Expect: 100-continue is refused before the body is sent', async () => {
    const source = path.join(dir, 'unsent.bin');
    await writeFile(source, bytes(8 * 1024 * 1024));
    // curl waits up to --expect100-timeout for the 100 before it sends the body anyway.
    const upload = async (password: string, file: string) =>
      (
        await run('curl', [
          ...['-sS', '-o', '/dev/null', '-w', '%{http_code} %{size_upload}', '--expect100-timeout', '20'],
          ...['-H', 'Expect: 100-continue', '-H', 'Content-Type: application/octet-stream'],
          ...['-u', `sender:${password}`, '-T', source, '-X', 'POST', `${t.base}/upload?file=${file}`],
        ])
      ).stdout;
    assert.equal(await upload('wrong-password', 'unsent.bin'), '401 0');
    // The right password: the 100 comes once the credentials are checked, and the body follows.
    assert.equal(await upload('sender-password', 'sent.bin'), `200 ${8 * 1024 * 1024}`);
  });

  test('Bearer upload to another area, list, download and resume byte-identical', async () => {
    const token = JSON.parse(
      await curl(
        '-X',
        'POST',
        '-H',
        'Content_type: application/x-www-form-urlencoded',
        '--data',
        'grant_type=password&username=sender&password=sender-password',
        `${t.base}/oauth2/token`,
      ),
    ) as { access_token: string };

    const original = bytes(5 * 1024 * 1024 + 123);
    const source = path.join(dir, 'relatório.bin');
    await writeFile(source, original);
    const upload = JSON.parse(
      await curl(
        '-X',
        'POST',
        '-H',
        `Authorization: Bearer ${token.access_token}`,
        '-H',
        'Content_type: multipart/form-data',
        '-F',
        `arquivo=@${source}`,
        `${t.base}/upload?file=${encodeURIComponent('relatório.bin')}&d=receiver`,
      ),
    ) as { description: string; files: { id: number; name: string; length: number }[] };
    assert.equal(upload.description, 'handlerDownloadList:succsessfully');
    assert.equal(upload.files[0]!.name, 'relatório.bin');

    const list = JSON.parse(
      await curl('-u', 'receiver:receiver-password', `${t.base}/download/list?page=1`),
    ) as {
      files: { id: number; linkURL: string }[];
    };
    const link = list.files.find((f) => f.id === upload.files[0]!.id)!.linkURL;

    // An interrupted download: keep only the first 2 MiB, then let curl resume where it stopped.
    const target = path.join(dir, 'download.bin');
    await curl('-o', target, link);
    await truncate(target, 2 * 1024 * 1024);
    await curl('-C', '-', '-o', target, link);
    const got = await readFile(target);
    assert.equal(got.length, original.length);
    assert.equal(
      createHash('sha256').update(got).digest('hex'),
      createHash('sha256').update(original).digest('hex'),
    );

    // The server saw a ranged request for the resume.
    const downloads = await t.server.services.audit.query({ event: 'download' });
    assert.ok(downloads.some((e) => /"range":"2097152-/.test(e.detail ?? '')));

    // curl -OJ names the file from Content-Disposition; it reads the ASCII `filename` fallback
    // (browsers use the RFC 5987 `filename*`, checked in files.test.ts).
    const { stdout } = await run('curl', ['-sS', '-OJ', '-w', '%{filename_effective}', link], { cwd: dir });
    assert.equal(path.basename(stdout), 'relat_rio.bin');
  });
});
