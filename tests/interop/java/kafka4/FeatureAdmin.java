import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.SupportedVersionRange;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;

/**
 * Feature admin modes (KIP-584's Admin calls).
 *
 * <ul>
 *   <li>{@code describe-features}: Admin.describeFeatures (an ApiVersions request), one
 *       {@code finalized} and one {@code supported} line per feature and an {@code epoch}
 *       line.</li>
 *   <li>{@code update-feature --feature F --level N --type upgrade|safe_downgrade
 *       --validate-only true|false}: Admin.updateFeatures, one {@code feature-updated} line
 *       with the exception's simple class name and message in {@code error}, or null.</li>
 * </ul>
 */
final class FeatureAdmin {
    private static final long TIMEOUT_S = 30;

    private FeatureAdmin() {
    }

    static int describe(Args args) throws InterruptedException, ExecutionException, TimeoutException {
        try (Admin admin = Admin.create(args.clientProps(Map.of()))) {
            FeatureMetadata metadata = admin.describeFeatures().featureMetadata()
                    .get(TIMEOUT_S, TimeUnit.SECONDS);
            for (Map.Entry<String, FinalizedVersionRange> e : metadata.finalizedFeatures().entrySet()) {
                Map<String, Object> line = new TreeMap<>();
                line.put("event", "finalized");
                line.put("feature", e.getKey());
                line.put("min", e.getValue().minVersionLevel());
                line.put("max", e.getValue().maxVersionLevel());
                Json.emit(line);
            }
            for (Map.Entry<String, SupportedVersionRange> e : metadata.supportedFeatures().entrySet()) {
                Map<String, Object> line = new TreeMap<>();
                line.put("event", "supported");
                line.put("feature", e.getKey());
                line.put("min", e.getValue().minVersion());
                line.put("max", e.getValue().maxVersion());
                Json.emit(line);
            }
            Map<String, Object> epoch = new TreeMap<>();
            epoch.put("event", "epoch");
            epoch.put("epoch", metadata.finalizedFeaturesEpoch().orElse(-1L));
            Json.emit(epoch);
            return 0;
        }
    }

    static int update(Args args) throws InterruptedException, TimeoutException {
        FeatureUpdate.UpgradeType type = FeatureUpdate.UpgradeType.valueOf(
                args.get("type").toUpperCase(java.util.Locale.ROOT));
        FeatureUpdate update = new FeatureUpdate((short) args.getInt("level"), type);
        UpdateFeaturesOptions options = new UpdateFeaturesOptions()
                .validateOnly(Boolean.parseBoolean(args.get("validate-only")));
        Map<String, Object> line = new TreeMap<>();
        line.put("event", "feature-updated");
        line.put("feature", args.get("feature"));
        try (Admin admin = Admin.create(args.clientProps(Map.of()))) {
            admin.updateFeatures(Map.of(args.get("feature"), update), options)
                    .all().get(TIMEOUT_S, TimeUnit.SECONDS);
            line.put("error", null);
        } catch (ExecutionException e) {
            line.put("error", e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage());
        }
        Json.emit(line);
        return 0;
    }
}
