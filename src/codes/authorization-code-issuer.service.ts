import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { randomToken, sha256 } from '../common/crypto/opaque-token.js';
import { Env } from '../config/env.js';
import { type Approval, AuthorizationCodesRepository, type Denial } from './authorization-codes.repository.js';

export { type Approval, STATE_APPROVED_CHANNEL } from './authorization-codes.repository.js';

/**
 * Turns completed sign-ins into authorization codes: 256 random bits, stored hashed, valid
 * AUTH_CODE_TTL seconds from the moment the device receives them. A state yields one code.
 */
@Injectable()
export class AuthorizationCodeIssuerService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly codes: AuthorizationCodesRepository,
    private readonly env: Env,
  ) {}

  /** Redirect flow: the code travels with the browser at once. Null when the state was already used. */
  approveWithRedirect(approval: Approval): Promise<string | null> {
    return this.dataSource.transaction(async (manager) => {
      if (!(await this.codes.insertApproval(manager, approval, true))) return null;
      const { code, codeHash } = this.newCode();
      await this.codes.insert(manager, { ...approval, codeHash, lifetimeSeconds: this.env.AUTH_CODE_TTL });
      return code;
    });
  }

  /** Polling flow: the code is minted when the device collects it. False when the state was already used. */
  approveForPolling(approval: Approval): Promise<boolean> {
    return this.codes.insertApproval(this.dataSource.manager, approval, false);
  }

  /** A sign-in cancelled at the identity provider. False when the state was already used. */
  deny(denial: Denial): Promise<boolean> {
    return this.codes.insertDenial(this.dataSource.manager, denial);
  }

  isDenied(stateId: string, clientId: string): Promise<boolean> {
    return this.codes.isDenied(this.dataSource.manager, stateId, clientId);
  }

  /** The code for an approved state, exactly once; null while not approved and after collection. */
  async pickUp(stateId: string, clientId: string): Promise<string | null> {
    const { code, codeHash } = this.newCode();
    return (await this.codes.pickUp(this.dataSource.manager, stateId, clientId, codeHash, this.env.AUTH_CODE_TTL)) ? code : null;
  }

  /** States whose code waits for its polling device, with when they expire. */
  awaitingPickUp(): Promise<{ stateId: string; expiresAt: Date }[]> {
    return this.codes.awaitingPickUp(this.dataSource.manager);
  }

  isStateUsed(stateId: string): Promise<boolean> {
    return this.codes.isStateUsed(this.dataSource.manager, stateId);
  }

  private newCode() {
    const code = randomToken(32);
    return { code, codeHash: sha256(code) };
  }
}
