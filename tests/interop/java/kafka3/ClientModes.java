/**
 * The 3.9 client runs only the modes every client has ({@link Harness}): it stays in the
 * matrix for the share consumer's v0 RPCs, and its Admin client predates listGroups and the
 * share-group admin calls of the 4.x modes.
 */
final class ClientModes {
    private ClientModes() {
    }

    /** Always null: no mode beyond the common ones. */
    static Integer run(String mode, Args args) {
        return null;
    }
}
