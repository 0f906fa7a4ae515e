import { describe } from 'vitest';
import { cloudServer } from './cloud-fixture.ts';
import { cloudWarehouseSuite } from './warehouse-suite.ts';

const server = cloudServer('s3', 'test/cloud/s3-warehouse.test.ts');

describe.skipIf(server.skip)(`an s3:// warehouse on RADOS Gateway${server.skip ? ` (skipped: ${server.missing})` : ''}`, () => {
  cloudWarehouseSuite(server);
});
