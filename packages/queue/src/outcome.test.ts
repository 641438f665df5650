import { CorruptRecordError, VerifyMismatchError } from '@seglift/format';
import { describe, expect, it } from 'vitest';
import {
  decodeJobFailure,
  decodeJobResult,
  encodeJobFailure,
  encodeJobResult,
  jobFailureOf,
} from './outcome.js';

describe('JobFailure', () => {
  it('a typed error keeps its code, file, position and offset, in the JSON earlier versions wrote', () => {
    const err = new CorruptRecordError('bad size', { file: '/x.log', position: 12, offset: 5n });
    const reason = encodeJobFailure(jobFailureOf(err));
    expect(reason).toBe(
      '{"name":"CorruptRecordError","code":"CORRUPT_RECORD","message":"bad size","file":"/x.log","position":12,"offset":"5"}',
    );
    expect(decodeJobFailure(reason)).toEqual({
      name: 'CorruptRecordError',
      code: 'CORRUPT_RECORD',
      message: 'bad size',
      file: '/x.log',
      position: 12,
      offset: '5',
    });
  });

  it('VERIFY_MISMATCH keeps the field that differs, as its toJSON() always carried it', () => {
    const err = new VerifyMismatchError('value', 'records differ', {
      file: '/x.log',
      position: 0,
      offset: 3n,
    });
    expect(encodeJobFailure(jobFailureOf(err))).toBe(JSON.stringify(err.toJSON()));
    expect(decodeJobFailure(encodeJobFailure(jobFailureOf(err)))).toEqual({ ...err.toJSON() });
  });

  it("a conversion report's error (a typed error's JSON, a plain object) keeps file, position and offset", () => {
    const fromReport = {
      name: 'CrcMismatchError',
      code: 'CRC_MISMATCH',
      message: 'CRC',
      file: '/d/0.log',
      position: 61,
      offset: '9',
    };
    expect(jobFailureOf(fromReport)).toEqual(fromReport);
    expect(decodeJobFailure(encodeJobFailure(jobFailureOf(fromReport)))).toEqual(fromReport);
  });

  it('an untyped error carries its name, code and message; anything else its text', () => {
    const e = Object.assign(new Error('no space left'), { code: 'ENOSPC', errno: -28 });
    expect(jobFailureOf(e)).toEqual({ name: 'Error', code: 'ENOSPC', message: 'no space left' });
    expect(jobFailureOf('boom')).toEqual({ name: 'Error', message: 'boom' });
    expect(jobFailureOf({ code: 'UNKNOWN', message: 'x', offset: 7 })).toEqual({
      code: 'UNKNOWN',
      message: 'x',
      offset: '7',
    });
  });

  it("decodes BullMQ's own reasons (not JSON) and odd JSON as a message; fields of the wrong type are left out", () => {
    expect(decodeJobFailure('job stalled more than allowable limit')).toEqual({
      message: 'job stalled more than allowable limit',
    });
    expect(decodeJobFailure('[1,2]')).toEqual({ message: '[1,2]' });
    expect(decodeJobFailure(undefined)).toEqual({ message: 'unknown' });
    expect(decodeJobFailure('{"code":"IO","file":3,"position":"12","offset":5}')).toEqual({
      code: 'IO',
      message: '{"code":"IO","file":3,"position":"12","offset":5}',
      offset: '5',
    });
  });
});

describe('JobResult', () => {
  it('encodes without undefined fields and decodes what a worker returned; anything else is none', () => {
    const r = encodeJobResult({
      path: '/d/t-0/00000000000000000000.log',
      result: 'converted',
      reason: undefined,
      bytesIn: 100,
      bytesOut: 60,
      durationMs: 12,
    });
    expect(Object.keys(r)).toEqual(['path', 'result', 'bytesIn', 'bytesOut', 'durationMs']);
    // As BullMQ stores and gives it back.
    expect(decodeJobResult(JSON.parse(JSON.stringify(r)))).toEqual(r);
    const skipped = { ...r, result: 'skipped', reason: 'missing', bytesOut: 100, durationMs: 0 };
    expect(decodeJobResult(JSON.parse(JSON.stringify(encodeJobResult(skipped))))).toEqual(skipped);
    expect(decodeJobResult({ result: 'converted' })).toBeUndefined();
    expect(decodeJobResult(null)).toBeUndefined();
  });
});
