import { commandLineIo } from './command-line-io.js';

/**
 * Reads a secret from stdin: the first line of piped input, or, at a terminal, one line typed
 * without echo.
 */
export async function readSecretFromStdin(prompt: string): Promise<string> {
  const { stdin, stderr } = commandLineIo();
  if (!stdin.isTTY || !stdin.setRawMode) {
    let input = '';
    for await (const chunk of stdin) input += chunk;
    return input.split(/\r?\n/)[0];
  }
  // Echo off before the prompt: an answer typed the moment it shows must not appear on screen.
  const setRawMode = stdin.setRawMode.bind(stdin);
  setRawMode(true);
  stderr.write(prompt);
  stdin.setEncoding('utf8');
  try {
    return await new Promise<string>((resolve, reject) => {
      let typed = '';
      const onData = (keys: string) => {
        for (const key of keys) {
          if (key === '\r' || key === '\n') return finish(() => resolve(typed));
          if (key === '\u0003') return finish(() => reject(new Error('cancelled')));
          typed = key === '\u007f' ? typed.slice(0, -1) : typed + key;
        }
      };
      const finish = (settle: () => void) => {
        stdin.off('data', onData);
        stderr.write('\n');
        settle();
      };
      stdin.on('data', onData);
      // A stream paused by an earlier read does not flow again just because a listener was added.
      stdin.resume();
    });
  } finally {
    setRawMode(false);
    stdin.pause();
  }
}
