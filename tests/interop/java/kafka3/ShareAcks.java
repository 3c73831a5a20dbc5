import java.util.Map;

/**
 * How the 3.9 share consumer (KIP-932 early access) acknowledges explicitly: it has no config
 * for it and settles on implicit acknowledgement when a second poll comes before any
 * acknowledge() call, so a consumer whose first poll is empty must be replaced.
 */
final class ShareAcks {
    static final boolean MODE_SET_BY_FIRST_POLLS = true;

    private ShareAcks() {
    }

    /** Nothing to set: the first acknowledge() call chooses the mode. */
    static void configureExplicit(Map<String, Object> props) {
    }
}
