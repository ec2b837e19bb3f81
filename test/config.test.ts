import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/core/config.js';

describe('configuration', () => {
  it('has embedded defaults', () => {
    const config = loadConfig({});
    expect(config.port).toBe(3000);
    expect(config.databaseUrl).toBeUndefined();
    expect(config.dataDir).toMatch(/\/data$/);
    expect(config.publicUrl).toBe('http://localhost:3000');
  });

  it('reports every invalid value at once', () => {
    expect(() => loadConfig({ PORT: 'eighty', DATABASE_URL: 'mysql://x', RATE_LIMIT_MAX: '0' })).toThrow(ConfigError);
    try {
      loadConfig({ PORT: 'eighty', DATABASE_URL: 'mysql://x', RATE_LIMIT_MAX: '0' });
    } catch (error) {
      const message = (error as Error).message;
      expect(message).toContain('PORT');
      expect(message).toContain('DATABASE_URL');
      expect(message).toContain('RATE_LIMIT_MAX');
    }
  });

  it('reads the mail settings, and refuses an SMTP URL of another scheme without printing it', () => {
    expect(loadConfig({ PUBLIC_URL: 'https://posts.example.com' }).mail).toEqual({
      smtpUrl: undefined,
      from: 'Post Scheduler <no-reply@posts.example.com>',
      installationName: 'Post Scheduler',
    });
    const mail = loadConfig({ SMTP_URL: 'smtps://u:p@mail.example.com', INSTALLATION_NAME: 'Acme' }).mail;
    expect(mail).toMatchObject({ smtpUrl: 'smtps://u:p@mail.example.com', from: 'Acme <no-reply@localhost>' });
    expect(() => loadConfig({ SMTP_URL: 'https://user:s3cret@mail.example.com' })).toThrow(
      /SMTP_URL must be an smtp:\/\/ or smtps:\/\/ URL$/m,
    );
    expect(() => loadConfig({ SMTP_URL: 'https://user:s3cret@mail.example.com' })).not.toThrow(/s3cret/);
    expect(() => loadConfig({ MAIL_FROM: 'not an address' })).toThrow(/MAIL_FROM must be an email address/);
  });

  it('refuses a public URL with a path', () => {
    expect(() => loadConfig({ PUBLIC_URL: 'https://example.com/app' })).toThrow(/PUBLIC_URL/);
  });

  it('lets pages of any origin call /mcp unless the operator lists the origins', () => {
    expect(loadConfig({}).mcpAllowedOrigins).toBe('any');
    expect(loadConfig({ MCP_ALLOWED_ORIGINS: '*' }).mcpAllowedOrigins).toBe('any');
    expect(
      loadConfig({ MCP_ALLOWED_ORIGINS: 'https://agent.example, http://localhost:6274/' }).mcpAllowedOrigins,
    ).toEqual(['https://agent.example', 'http://localhost:6274']);
    expect(() => loadConfig({ MCP_ALLOWED_ORIGINS: 'https://agent.example/app' })).toThrow(/MCP_ALLOWED_ORIGINS/);
    expect(() => loadConfig({ MCP_ALLOWED_ORIGINS: 'agent.example' })).toThrow(/MCP_ALLOWED_ORIGINS/);
  });

  it('checks every response against the contract unless told otherwise, and always in tests', () => {
    expect(loadConfig({}).responseValidation).toBe('strict');
    expect(loadConfig({ RESPONSE_VALIDATION: 'sample' }).responseValidation).toBe('sample');
    expect(loadConfig({ RESPONSE_VALIDATION: 'off', NODE_ENV: 'production' }).responseValidation).toBe('off');
    expect(() => loadConfig({ RESPONSE_VALIDATION: 'some' })).toThrow(
      /RESPONSE_VALIDATION must be one of strict, sample, off/,
    );
    expect(() => loadConfig({ RESPONSE_VALIDATION: 'off', NODE_ENV: 'test' })).toThrow(
      /RESPONSE_VALIDATION must be strict when NODE_ENV=test/,
    );
  });

  it('offers X with the operator’s app only, on X’s addresses unless told others', () => {
    expect(loadConfig({}).x).toBeUndefined();
    expect(loadConfig({ X_CLIENT_ID: 'app', X_CLIENT_SECRET: 'secret' }).x).toEqual({
      clientId: 'app',
      clientSecret: 'secret',
      apiUrl: 'https://api.x.com',
      authorizeUrl: 'https://x.com/i/oauth2/authorize',
    });
    expect(
      loadConfig({
        X_CLIENT_ID: 'app',
        X_CLIENT_SECRET: 'secret',
        X_API_URL: 'http://127.0.0.1:8080/',
        X_AUTHORIZE_URL: 'http://127.0.0.1:8080/i/oauth2/authorize',
      }).x,
    ).toMatchObject({ apiUrl: 'http://127.0.0.1:8080', authorizeUrl: 'http://127.0.0.1:8080/i/oauth2/authorize' });
    expect(() => loadConfig({ X_CLIENT_ID: 'app' })).toThrow(/X_CLIENT_ID and X_CLIENT_SECRET go together/);
    expect(() =>
      loadConfig({ X_CLIENT_ID: 'app', X_CLIENT_SECRET: 'secret', X_AUTHORIZE_URL: 'https://x.com/authorize?x=1' }),
    ).toThrow(/X_AUTHORIZE_URL must be an http\(s\) URL without a query/);
  });
  it('offers LinkedIn with the operator’s app only, on a LinkedIn API version checked at start', () => {
    expect(loadConfig({}).linkedin).toBeUndefined();
    expect(loadConfig({ LINKEDIN_CLIENT_ID: 'app', LINKEDIN_CLIENT_SECRET: 'secret' }).linkedin).toEqual({
      clientId: 'app',
      clientSecret: 'secret',
      version: '202607',
      communityManagement: false,
      apiUrl: 'https://api.linkedin.com',
      authUrl: 'https://www.linkedin.com',
    });
    const app = { LINKEDIN_CLIENT_ID: 'app', LINKEDIN_CLIENT_SECRET: 'secret' };
    expect(
      loadConfig({ ...app, LINKEDIN_VERSION: '202610', LINKEDIN_COMMUNITY_MANAGEMENT: 'true' }).linkedin,
    ).toMatchObject({ version: '202610', communityManagement: true });
    for (const version of ['2026-07', '202613', 'v2', '20260701'])
      expect(() => loadConfig({ ...app, LINKEDIN_VERSION: version })).toThrow(
        /LINKEDIN_VERSION must be a LinkedIn API version/,
      );
  });

  it('keeps finished jobs a week, settled webhook deliveries 30 days and the audit log a year unless told otherwise', () => {
    expect(loadConfig({}).retention).toEqual({ jobsDays: 7, webhookDeliveriesDays: 30, auditLogDays: 365 });
    expect(
      loadConfig({ JOB_RETENTION_DAYS: '2', WEBHOOK_DELIVERY_RETENTION_DAYS: '90', AUDIT_LOG_RETENTION_DAYS: '730' })
        .retention,
    ).toEqual({ jobsDays: 2, webhookDeliveriesDays: 90, auditLogDays: 730 });
    for (const days of ['0', '366', 'a week'])
      expect(() => loadConfig({ JOB_RETENTION_DAYS: days, WEBHOOK_DELIVERY_RETENTION_DAYS: days })).toThrow(
        /JOB_RETENTION_DAYS[\s\S]*WEBHOOK_DELIVERY_RETENTION_DAYS/,
      );
    for (const days of ['0', '3651', 'a year'])
      expect(() => loadConfig({ AUDIT_LOG_RETENTION_DAYS: days })).toThrow(/AUDIT_LOG_RETENTION_DAYS/);
  });
});
