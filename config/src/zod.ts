/**
 * The schemas (the settings here, the job payload in @seglift/queue) are built with zod's mini
 * API, `zod/mini`: the classic `zod` API does not tree-shake, it put ~470 KB into every program
 * that validates settings (issue 26). zod/mini loads no locale, so every message would read
 * "Invalid input": this sets zod's English messages, the ones the classic API set on its import
 * and the operators, the tests and the docs know.
 */
import { config } from 'zod/mini';
import en from 'zod/v4/locales/en.js';

let done = false;

/** Sets zod's English messages (process-wide); each module that builds a schema calls it at load. */
export function useEnglishZodMessages(): void {
  if (done) return;
  config(en());
  done = true;
}
