import { execFile, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

/**
 * Python's pty module plays the terminal (Node has none built in): it answers each prompt that
 * ends in ": " with the next answer and a carriage return, as a person typing would.
 */
const PLAY_TERMINAL = `
import json, os, pty, sys
argv, answers = json.loads(sys.argv[1]), json.loads(sys.argv[2])
pid, fd = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)
output, answered = b'', 0
while True:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    output += chunk
    if answered < len(answers) and output.rstrip(b'\\n').endswith(b': ') and output.count(b': ') > answered:
        os.write(fd, answers[answered].encode() + b'\\r')
        answered += 1
_, status = os.waitpid(pid, 0)
print(json.dumps({'code': os.waitstatus_to_exitcode(status), 'output': output.decode(errors='replace')}))
`;

/** Whether this machine can play a terminal (python3 on PATH). */
export const canPlayTerminal = spawnSync('python3', ['--version']).status === 0;

/** Runs the built CLI at a terminal: stdin, stdout and stderr all one pseudo-terminal; everything it wrote, in order. */
export function runCliAtTerminal(args: string[], answers: string[], env: Record<string, string>): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      'python3',
      ['-c', PLAY_TERMINAL, JSON.stringify([process.execPath, CLI, ...args]), JSON.stringify(answers)],
      { env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8', timeout: 30_000 },
      (error, stdout, stderr) => (error ? reject(new Error(`the terminal player failed: ${error.message} ${stderr}`)) : resolve(JSON.parse(stdout))),
    );
  });
}
