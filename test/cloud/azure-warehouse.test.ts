import { describe } from 'vitest';
import { cloudServer } from './cloud-fixture.ts';
import { cloudWarehouseSuite } from './warehouse-suite.ts';

const server = cloudServer('azure', 'test/cloud/azure-warehouse.test.ts');

describe.skipIf(server.skip)(`an az:// warehouse on Azurite${server.skip ? ` (skipped: ${server.missing})` : ''}`, () => {
  cloudWarehouseSuite(server);
});
