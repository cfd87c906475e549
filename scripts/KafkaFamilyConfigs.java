/*
 * Print the configs of Kafka's two KRaft-only config families as JSON (stdout): consumer/share/
 * streams group configs (ConfigResource type GROUP) and client-metrics subscriptions
 * (ConfigResource type CLIENT_METRICS).
 *
 * Run by scripts/generate_family_schemas.py:
 *   java -cp 'build/kafka4/libs/*' scripts/KafkaFamilyConfigs.java
 * It reads Kafka's own definitions, never a copy of them:
 *   groups         - org.apache.kafka.coordinator.group.GroupConfig.CONFIG_DEF (what a group may set),
 *                    isInternal() and ALL_GROUP_CONFIG_SYNONYMS (the broker key each one falls back to);
 *   client-metrics - org.apache.kafka.server.metrics.ClientMetricsConfigs.configDef(), and the client
 *                    fields a subscription's "match" may name (its CLIENT_* constants).
 * A validator's bounds (ConfigDef.Range) and allowed strings (ValidString, ValidList,
 * CaseInsensitiveValidString) are read from the validator object itself, so the schema's ranges are
 * Kafka's and not a parse of its toString().
 */
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.utils.internals.AppInfoParser;
import org.apache.kafka.coordinator.group.GroupConfig;
import org.apache.kafka.server.metrics.ClientMetricsConfigs;

public class KafkaFamilyConfigs {
    static Object field(Object target, String name) {
        for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(target);
            } catch (NoSuchFieldException e) {
                continue;
            } catch (IllegalAccessException e) {
                throw new RuntimeException(e);
            }
        }
        return null;
    }

    static void bounds(Object validator, Map<String, Object> out) {
        if (validator == null) {
            return;
        }
        if (validator instanceof ConfigDef.Range) {
            out.put("min", field(validator, "min"));
            out.put("max", field(validator, "max"));
            return;
        }
        for (String name : new String[] {"validStrings", "validString"}) {
            Object values = field(validator, name);
            if (values instanceof List) {
                out.put("enum", new ArrayList<>((List<?>) values));
                return;
            }
            if (values != null && field(values, "validStrings") instanceof List) {
                out.put("enum", new ArrayList<>((List<?>) field(values, "validStrings")));
                return;
            }
        }
    }

    static Map<String, Object> fact(ConfigDef.ConfigKey key) {
        Map<String, Object> out = new TreeMap<>();
        out.put("type", key.type.name().toLowerCase());
        Object def = key.defaultValue;
        if (def == ConfigDef.NO_DEFAULT_VALUE) {
            out.put("default", null);
            out.put("required", true);
        } else {
            out.put("default", def == null ? null : ConfigDef.convertToString(def, key.type));
        }
        out.put("importance", key.importance == null ? null : key.importance.name().toLowerCase());
        out.put("valid_values", key.validator == null ? null : key.validator.toString());
        out.put("validator_class", key.validator == null ? null : key.validator.getClass().getSimpleName());
        bounds(key.validator, out);
        return out;
    }

    public static void main(String[] args) throws Exception {
        Map<String, Object> root = new TreeMap<>();
        root.put("kafka_version", AppInfoParser.getVersion());

        Map<String, Object> groups = new TreeMap<>();
        for (Map.Entry<String, ConfigDef.ConfigKey> e : GroupConfig.CONFIG_DEF.configKeys().entrySet()) {
            Map<String, Object> f = fact(e.getValue());
            f.put("internal", GroupConfig.isInternal(e.getKey()));
            Optional<String> synonym = GroupConfig.ALL_GROUP_CONFIG_SYNONYMS.getOrDefault(e.getKey(), Optional.empty());
            f.put("broker_synonym", synonym.orElse(null));
            groups.put(e.getKey(), f);
        }
        root.put("groups", groups);

        Map<String, Object> metrics = new TreeMap<>();
        for (Map.Entry<String, ConfigDef.ConfigKey> e : ClientMetricsConfigs.configDef().configKeys().entrySet()) {
            metrics.put(e.getKey(), fact(e.getValue()));
        }
        root.put("client-metrics", metrics);
        // What a subscription's "match" entries may select on (ClientMetricsConfigs.isValidParam).
        root.put("client-metrics-match-keys", List.of(
            ClientMetricsConfigs.CLIENT_INSTANCE_ID,
            ClientMetricsConfigs.CLIENT_ID,
            ClientMetricsConfigs.CLIENT_SOFTWARE_NAME,
            ClientMetricsConfigs.CLIENT_SOFTWARE_VERSION,
            ClientMetricsConfigs.CLIENT_SOURCE_ADDRESS,
            ClientMetricsConfigs.CLIENT_SOURCE_PORT));

        ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        System.out.println(mapper.writeValueAsString(root));
    }
}
