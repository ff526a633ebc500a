// Runs `remessa …` (bin/remessa.js) as a child process with only the REMESSA_* settings given.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment of the test process without any REMESSA_* setting of its own. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('REMESSA_')) env[k] = v;
  return { ...env, ...extra };
}

export function run(
  command: string,
  args: string[],
  opts: { env: Record<string, string>; stdin?: string; cwd?: string },
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: opts.cwd ?? ROOT, env: cleanEnv(opts.env), stdio: 'pipe' });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(opts.stdin ?? '');
  });
}

/** `remessa ARGS` with the given settings. */
export const remessa = (env: Record<string, string>, args: string[], stdin?: string) =>
  run(process.execPath, ['bin/remessa.js', ...args], { env, stdin });
