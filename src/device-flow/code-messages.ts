import { waitInWords } from '../oauth-helper/wait-in-words.js';
import { displayUserCode, USER_CODE_LENGTH, type UserCodeFlaw } from './user-code.js';

// What the code form says when it does not accept a code: one message per cause, each saying
// what happened and what to do next. None names an account: whoever types a code has not signed in.

const CHECK = 'Check the code on your device.';

/** What was typed cannot be a code: how long it is, or which characters no code has. */
export function flawedCodeMessage(flaw: UserCodeFlaw): string {
  if ('length' in flaw) {
    return `That code has ${flaw.length} character${flaw.length === 1 ? '' : 's'}, but a code has ${USER_CODE_LENGTH} letters. ${CHECK}`;
  }
  const quoted = flaw.foreign.slice(0, 3).map((char) => `"${char}"`);
  return `A code never has ${quoted.length > 1 ? `${quoted.slice(0, -1).join(', ')} or ${quoted.at(-1)}` : quoted[0]}. ${CHECK}`;
}

export const codeMessages = {
  missing: 'Enter the code shown on your device.',
  malformedForm: 'The form was malformed. Enter the code again.',
  throttled: (waitSeconds: number) => `Too many wrong codes. Try again in ${waitInWords(waitSeconds)}.`,
  /** Well-formed, but no device authorization has it (never issued, or expired and purged). */
  unknown: (code: string) => `No device is waiting for the code ${displayUserCode(code)}. ${CHECK}`,
  expired: (code: string) => `The code ${displayUserCode(code)} has expired. Start again on your device to get a new one.`,
  approved: (code: string) => `The code ${displayUserCode(code)} was already approved, perhaps in another tab: the device is connected. You can close this page.`,
  denied: (code: string) =>
    `The code ${displayUserCode(code)} was already denied, perhaps in another tab: the device was not connected. To connect it, start again on your device.`,
  /** A sign-out voided it: the account that signed in for it was disabled, or signed out of its devices. */
  cancelled: (code: string, accountDisabled: boolean) =>
    accountDisabled
      ? `The request with the code ${displayUserCode(code)} was cancelled: the account that signed in for it has been disabled.`
      : `The request with the code ${displayUserCode(code)} was cancelled: the account that signed in for it was signed out. Start again on your device.`,
  clientDisabled: (code: string, clientName: string) => `The code ${displayUserCode(code)} is for ${clientName}, which an administrator has disabled: it cannot be connected.`,
  clientDeleted: (code: string) => `The code ${displayUserCode(code)} is for an application that has been removed: it cannot be connected.`,
};
