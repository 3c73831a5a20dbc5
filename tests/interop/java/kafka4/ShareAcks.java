import java.util.Map;

/** How the 4.x share consumer acknowledges explicitly: it is a config (KIP-932 final). */
final class ShareAcks {
    /** The mode is fixed by the config, whatever the first polls return. */
    static final boolean MODE_SET_BY_FIRST_POLLS = false;

    private ShareAcks() {
    }

    static void configureExplicit(Map<String, Object> props) {
        props.put("share.acknowledgement.mode", "explicit");
    }
}
