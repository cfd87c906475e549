/*
 * Print the config facts of the Kafka release on the class path as JSON (stdout).
 *
 * Run by scripts/generate_kafka4_facts.py:
 *   java -cp 'build/kafka4/libs/*' scripts/KafkaConfigFacts.java
 * It reads Kafka's own definitions, never a copy of them:
 *   topics  - org.apache.kafka.storage.internals.log.LogConfig.configKeys() (what a topic may set)
 *             and nonInternalConfigNames() (internal keys are not documented and not for operators);
 *             ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS (the broker keys behind each one);
 *   brokers - org.apache.kafka.server.config.AbstractKafkaConfig.CONFIG_DEF (every broker key) and
 *             DynamicBrokerConfig.dynamicConfigUpdateModes() (read-only / per-broker / cluster-wide).
 */
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.utils.internals.AppInfoParser;
import org.apache.kafka.server.config.AbstractKafkaConfig;
import org.apache.kafka.server.config.ConfigSynonym;
import org.apache.kafka.server.config.DynamicBrokerConfig;
import org.apache.kafka.server.config.ServerTopicConfigSynonyms;
import org.apache.kafka.storage.internals.log.LogConfig;

public class KafkaConfigFacts {
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
        out.put("sensitive", key.type == ConfigDef.Type.PASSWORD);
        return out;
    }

    public static void main(String[] args) throws Exception {
        Map<String, Object> root = new TreeMap<>();
        root.put("kafka_version", AppInfoParser.getVersion());

        Map<String, Object> topics = new TreeMap<>();
        List<String> documented = LogConfig.nonInternalConfigNames();
        for (Map.Entry<String, ConfigDef.ConfigKey> e : LogConfig.configKeys().entrySet()) {
            Map<String, Object> f = fact(e.getValue());
            f.put("internal", !documented.contains(e.getKey()));
            List<String> synonyms = new ArrayList<>();
            for (ConfigSynonym s : ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS.getOrDefault(e.getKey(), List.of())) {
                synonyms.add(s.name());
            }
            f.put("broker_synonyms", synonyms);
            topics.put(e.getKey(), f);
        }
        root.put("topics", topics);

        Map<String, String> modes = DynamicBrokerConfig.dynamicConfigUpdateModes();
        Map<String, Object> brokers = new TreeMap<>();
        for (Map.Entry<String, ConfigDef.ConfigKey> e : AbstractKafkaConfig.CONFIG_DEF.configKeys().entrySet()) {
            Map<String, Object> f = fact(e.getValue());
            f.put("update_mode", modes.getOrDefault(e.getKey(), "read-only"));
            brokers.put(e.getKey(), f);
        }
        root.put("brokers", brokers);

        ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        System.out.println(mapper.writeValueAsString(root));
    }
}
