// Whether the optional native module (sendfile downloads, upload hashing) is here to be tested.
// Where it is not built, its tests skip with a visible message; CI sets
// REMESSA_TEST_REQUIRE_SENDFILE=1 so that there they cannot skip.
import { nativeModule } from '../../src/platform/native/native.js';

export const NATIVE_SKIP = nativeModule()
  ? false
  : 'native module not built (no C compiler?): only the pure-Node paths are tested';
if (NATIVE_SKIP && process.env['REMESSA_TEST_REQUIRE_SENDFILE'] === '1') {
  throw new Error('REMESSA_TEST_REQUIRE_SENDFILE=1 but native/build/Release/remessa_native.node is missing');
}
if (NATIVE_SKIP) console.log(`# SKIP native module: ${NATIVE_SKIP}`);
