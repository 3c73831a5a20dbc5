/**
 * The modes of the 4.x client beyond those every client runs ({@link Harness}): group admin
 * through Admin.listGroups and describeConsumerGroups ({@link GroupAdmin}) and the share-group
 * admin calls ({@link ShareGroupAdmin}) and feature admin ({@link FeatureAdmin}), none of which the 3.9 Admin client has in this form.
 */
final class ClientModes {
    private ClientModes() {
    }

    /** The mode's exit code, or null when this client has no such mode. */
    static Integer run(String mode, Args args) throws Exception {
        return switch (mode) {
            case "list-groups" -> GroupAdmin.listGroups(args);
            case "describe-groups" -> GroupAdmin.describeGroups(args);
            case "delete-group-offsets" -> GroupAdmin.deleteGroupOffsets(args);
            case "delete-groups" -> GroupAdmin.deleteGroups(args);
            case "describe-share-groups" -> ShareGroupAdmin.describe(args);
            case "share-group-offsets" -> ShareGroupAdmin.offsets(args);
            case "alter-share-group-offsets" -> ShareGroupAdmin.alterOffsets(args);
            case "delete-share-group-offsets" -> ShareGroupAdmin.deleteOffsets(args);
            case "delete-share-groups" -> ShareGroupAdmin.deleteGroups(args);
            case "describe-features" -> FeatureAdmin.describe(args);
            case "update-feature" -> FeatureAdmin.update(args);
            default -> null;
        };
    }
}
