// The operator's `file delete` and `link revoke|set`: taking back what was sent, given the owner's
// link (its URL, as the upload answered it, or only its token).
import type { Command } from 'commander';
import { parseExpiry } from '../../features/keys/key-service.js';
import { MAX_DOWNLOAD_LIMIT } from '../../features/links/link-control.js';
import { invalid } from '../../platform/errors.js';
import type { Services } from '../services.js';
import { withServices } from './context.js';

/** The token of an owner's link given as its URL (`…/download/file?k=…`) or as the token itself. */
export function linkToken(link: string): string {
  if (!/^https?:\/\//i.test(link)) return link.trim();
  const k = new URL(link).searchParams.get('k');
  if (!k) throw invalid('LINK: a download link with k=, as the upload answered it');
  return k;
}

const BY_OPERATOR = { remote: null, via: 'cli' } as const;

async function owned(s: Services, link: string) {
  return s.tracking.byOwnerToken(linkToken(link));
}

/** file delete; link revoke, link set */
export function addLinkCommands(program: Command): void {
  const file = program.command('file').description("files in users' areas");
  file
    .command('delete')
    .argument('<link>', "the owner's link of the file")
    .description('delete the file now: its contents and every link, on every instance')
    .action(async (link: string) => {
      await withServices(async (s) => {
        const found = await owned(s, link);
        await s.linkControl.deleteFile(found, BY_OPERATOR);
        console.log(`deleted ${found.file.name}`);
      });
    });

  const links = program.command('link').description("recipients' links of a file");
  links
    .command('revoke')
    .argument('<link>', "the owner's link of the file")
    .requiredOption('--to <address>', "the recipient's e-mail, mobile or link id")
    .description("revoke one recipient's link; the others keep working")
    .action(async (link: string, o: { to: string }) => {
      await withServices(async (s) => {
        const revoked = await s.linkControl.revoke(await owned(s, link), o.to, BY_OPERATOR);
        console.log(`revoked the link of recipient ${revoked.id}`);
      });
    });
  links
    .command('set')
    .argument('<link>', "the owner's link of the file")
    .option('--to <address>', "one recipient's link (default: the file's validity and every recipient link)")
    .option('--expires <when>', 'ISO 8601 date or time, or a count like 3d or 12h')
    .option(
      '--max-downloads <n>',
      `complete downloads after which a recipient link retires (1–${MAX_DOWNLOAD_LIMIT}, or "none")`,
    )
    .description("change a link's expiry or download limit")
    .action(async (link: string, o: { to?: string; expires?: string; maxDownloads?: string }) => {
      await withServices(async (s) => {
        const found = await owned(s, link);
        const expiresAt = o.expires === undefined ? undefined : parseExpiry(o.expires, s.clock.now());
        const maxDownloads = o.maxDownloads === undefined ? undefined : downloadsLimit(o.maxDownloads);
        await s.linkControl.change(found, o.to, { expiresAt, maxDownloads }, BY_OPERATOR);
        console.log(`changed ${o.to ? `the link of ${o.to}` : 'every link'} of ${found.file.name}`);
      });
    });
}

function downloadsLimit(value: string): number | null {
  if (value === 'none') return null;
  if (!/^\d{1,7}$/.test(value)) throw invalid(`--max-downloads: a whole number or "none", got "${value}"`);
  return Number(value);
}
