// The independent view of a segment lives in @seglift/testkit (shared with the apps' tests).
export * from '@seglift/testkit/independent';
