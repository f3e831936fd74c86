import { describe, expect, it } from 'vitest';
import { databaseUnavailableReason } from '../../../src/common/errors/database-unavailable.js';

/** What TypeORM throws: a QueryFailedError carrying pg's error as driverError. */
const wrapped = (driverError: object) => Object.assign(new Error('query failed'), { driverError });

describe('databaseUnavailableReason', () => {
  it('names waits that ran out, lost connections and overload', () => {
    expect(databaseUnavailableReason(wrapped({ code: '57014', message: 'canceling statement due to statement timeout' }))).toBe('timeout');
    expect(databaseUnavailableReason(wrapped({ code: '55P03', message: 'canceling statement due to lock timeout' }))).toBe('lock');
    expect(databaseUnavailableReason(wrapped({ code: '57P01', message: 'terminating connection due to administrator command' }))).toBe('connection');
    expect(databaseUnavailableReason(wrapped({ code: '08006' }))).toBe('connection');
    expect(databaseUnavailableReason(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }))).toBe('connection');
    expect(databaseUnavailableReason(new Error('timeout exceeded when trying to connect'))).toBe('connection');
    expect(databaseUnavailableReason(new Error('Connection terminated unexpectedly'))).toBe('connection');
    expect(databaseUnavailableReason(wrapped({ code: '53300' }))).toBe('overload');
  });

  it('leaves the request’s own faults and the code’s bugs alone', () => {
    expect(databaseUnavailableReason(wrapped({ code: '22021', message: 'invalid byte sequence for encoding "UTF8": 0x00' }))).toBeUndefined();
    expect(databaseUnavailableReason(wrapped({ code: '23505' }))).toBeUndefined();
    expect(databaseUnavailableReason(wrapped({ code: '42601' }))).toBeUndefined();
    expect(databaseUnavailableReason(new TypeError('x is undefined'))).toBeUndefined();
    expect(databaseUnavailableReason(undefined)).toBeUndefined();
  });
});
