"""The offline model's intents as data: what each tool (or refusal) is for, the words that
ask for it, the object it acts on, and the slots it needs.

Every row is scored against a request (agent/offline/intents.py); the best score wins,
so the order of this table decides nothing. A row's `triggers` are phrases and synonyms
that name its action (each one found scores high), `cues` are words that make it likelier
(its object nouns, list words), `avoid` rules the row out. Slots: `object` is the id of
the row's `kind` (from the message, a name resolved by a search, "it", or the page),
`envs` a source and target environment; the others are tool arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CHAT", "CREATE", "INTENTS", "LISTING_VERBS", "REFERENCE", "IntentSpec"]


@dataclass(frozen=True)
class IntentSpec:
    name: str  # a tool, or "refuse:<verb>_<noun>" for a capability no tool has
    kind: str | None  # the object the request is about: dashboard | dataset | chart | None
    triggers: tuple[str, ...]
    cues: tuple[str, ...] = ()
    avoid: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    weak: tuple[str, ...] = ()  # generic verbs ("show", "open"): enough alone, worth less

    @property
    def tool(self) -> str | None:
        return None if self.name.startswith("refuse:") else self.name


LISTING_VERBS = (r"\b(?:list|show|see|view|display|give me|find|search|browse|look(?:ing)? for"
                 r"|any|all|every|which|what|how many|are there|exist|available)\b")
# Words that point at one object already known: the page's, or the last one mentioned.
REFERENCE = r"\b(?:it|its|this|that|here|these|them|this one|that one)\b"
_DASH = r"\bdashboards?\b"
_DATA = r"\b(?:datasets?|tables?|data ?sources?)\b"
_CHART = r"\b(?:charts?|visuali[sz]ations?|graphs?|widgets?|slices?|plots?)\b"
_CREATE = (r"\b(?:create|build|design|draw|set up|put together)\b(?:\s+(?:me|us))?.{0,30}?"
           r"\b(dashboard|chart|dataset|visuali[sz]ation|graph)s?\b"
           r"|\b(?:make|add|start)(?:\s+(?:me|us))?\s+(?:a|an|another|new|some)\b.{0,20}?"
           r"\b(dashboard|chart|dataset|visuali[sz]ation|graph)s?\b"
           r"|\b(?:new|another|fresh|blank|empty) (dashboard|chart|dataset)s?\b")
_DELETE = (r"\b(?:delete|remove|drop|destroy|trash|erase|wipe|nuke|get rid of|throw away|kill"
           r"|bin it)\b|\b(?:want|need) (?:it|this|that|them|this \w+|\w+ \d+) (?:gone|deleted"
           r"|removed)|don'?t need (?:it|this|that)\w*(?: \w+)? any ?more|no longer need")
_CHANGE_VERB = r"\b(?:set|change|update|make|edit|modify|adjust|put)\b"

INTENTS: tuple[IntentSpec, ...] = (
    IntentSpec("show_capabilities", None, (
        r"what (?:else |sort of things |kinds? of things |things )?can (?:you|i|we) "
        r"(?:do|ask|help)", r"capabilit", r"what (?:tools|commands|options)",
        r"which tools", r"what(?:'s| are) my options", r"what are you (?:able|capable)",
        r"(?:able|capable) (?:to|of) (?:help|do)", r"how (?:can|could|do|would) you help",
        r"what do you do", r"who are you", r"^\s*(?:help|\?|/help)\s*[.!?]*\s*$",
        r"how does this work", r"where (?:do i|to|should i) start", r"what can i ask")),
    IntentSpec("list_environments", None, (
        r"\b(?:environments?|envs?|instances?|tiers?|superset servers?)\b",), cues=(
        LISTING_VERBS, r"talk to|connected|know|remind"), avoid=(
        _DASH, _DATA, _CHART, r"\bpromot|\bmigrat|\bdeploy|\bcompar|\bdiff")),
    IntentSpec("list_dashboards", "dashboard", (
        r"\bdashboards\b", r"\bwhich ones\b|\bwhat ones\b", r"\bany dashboards?\b"), cues=(
        LISTING_VERBS, r"\b(?:published|drafts?|live|public)\b"), avoid=(
        r"\bdashboards? (?:#\s*)?\d+\s*(?:-|–|to|through|thru|,|and)\s*#?\d+",),
        optional=("env_id", "search", "published", "page_size")),
    IntentSpec("get_dashboard", "dashboard", (
        r"tell me (?:more )?about", r"\bdescribe\b", r"\bdetails?\b|\binfo\b|information",
        r"overview|summar", r"what(?:'s| is) (?:this|it|that)(?: \w+)? about", r"who owns",
        r"\bowners?\b", r"when was", r"last (?:changed|modified|updated|edited)",
        r"\bis (?:it|this|that)(?: \w+)? (?:published|live|public|a draft)",
        r"\bslug\b|\burl\b|\blink\b", r"what is (?:this|it)\b", r"status of"),
        cues=(_DASH, REFERENCE), avoid=(r"\bdashboards\b(?!\s*#?\s*\d)",),
        weak=(r"\b(?:open|show|get|see|display|look at|fetch|pull up)\b",
              r"\bdashboards?\s*#?\d+\s*(?:-|–|to|through|thru|,|and)\s*#?\d+"),
        required=("object",), optional=("env_id",)),
    IntentSpec("get_dashboard_charts", "dashboard", (
        _CHART, r"what(?:'s| is) (?:on|in) (?:it|this|here|there)", r"\bin here\b"), cues=(
        REFERENCE, r"\bon (?:it|this|that|the dashboard)|\bin (?:it|this|that)\b|\bhave\b"
        r"|\bcontain", r"\bthe (?:charts|visuali[sz]ations|graphs)\b"),
        avoid=(r"\b(?:use|uses|using|built on|based on|rely|relies|depend)\b",),
        required=("object",), optional=("env_id",)),
    IntentSpec("get_dashboard_datasets", "dashboard", (
        _DATA, r"\bdata (?:come|comes|coming) from|get (?:its|the|their) data"
        r"|where does (?:it|this|that)(?: \w+)? get", r"\bunderlying data\b"), cues=(
        r"\b(?:use|uses|using|behind|feeds?|powers?|built on|based on|underlying|source)\b",
        REFERENCE, _DASH), required=("object",), optional=("env_id",)),
    IntentSpec("export_dashboard", "dashboard", (
        r"\bexport", r"\bdownload", r"\bbundle\b|\bzip\b", r"\bback(?:ed)? ?up\b",
        r"\b(?:save|get|keep) a copy\b"), cues=(_DASH, REFERENCE),
        required=("object",), optional=("env_id",)),
    IntentSpec("update_dashboard", "dashboard", (
        r"\b(?:re-?name|re-?title)\b",
        _CHANGE_VERB + r".{0,20}\b(?:title|name|heading)\b",
        r"\b(?:title|name) (?:should|must|needs to) (?:be|read)",
        r"\bcall (?:it|this|that|the \w+(?: \w+)? dashboard)\b|\bname (?:it|this)\b",
        r"\bnew (?:title|name)\b", _CHANGE_VERB + r".{0,20}\bslug\b",
        _CHANGE_VERB + r".{0,20}\bowners?\b|\b(?:assign|transfer) (?:it|this|ownership)"),
        cues=(_DASH, REFERENCE), avoid=(r"\b(?:who|when|what)\b.{0,20}\b(?:title|name|owners?)\b"
                                      r"(?!.*\b(?:to|as)\b)",),
        required=("object", "changes"), optional=("env_id",)),
    IntentSpec("set_dashboard_published", "dashboard", (
        r"\bpublish", r"\bunpublish", r"\bmake (?:it|this|that)(?: \w+)? (?:public|live|visible"
        r"|private|hidden|invisible|a draft|draft)", r"\bgo live\b|\bmake (?:it|this) live\b",
        r"\b(?:back )?to (?:a )?draft\b|\bas (?:a )?draft\b", r"\bvisible to\b",
        r"\btake (?:it|this)(?: \w+)? down\b", r"\bhide (?:it|this)"), cues=(_DASH, REFERENCE),
        avoid=(r"^\s*(?:is|was|are|were|has|when|who)\b", r"\bwhich (?:ones|dashboards)\b",
               r"\b(?:published|drafts?|unpublished|live|public) dashboards\b"),
        required=("object", "published"), optional=("env_id",)),
    IntentSpec("delete_dashboard", "dashboard", (_DELETE,), cues=(_DASH, REFERENCE),
               required=("object",), optional=("env_id",)),
    IntentSpec("list_datasets", "dataset", (
        r"\b(?:datasets|tables|data ?sources)\b",), cues=(LISTING_VERBS,), avoid=(
        r"\b(?:uses?|using|behind|feeds?|powers?|built on|based on|underlying)\b",),
        optional=("env_id", "search", "page_size")),
    IntentSpec("get_dataset", "dataset", (
        r"tell me (?:more )?about", r"\bdescribe\b", r"\bdetails?\b|\binfo\b|information",
        r"overview|summar", r"\bcolumns?\b|\bfields?\b|\bschema\b|\bmetrics?\b",
        r"what(?:'s| is) in (?:it|this|that)", r"\bowners?\b|who owns",
        r"what is (?:this|it)\b"), weak=(r"\b(?:open|show|get|see|look at|pull up)\b",),
        cues=(_DATA, REFERENCE), avoid=(r"\b(?:refresh|re-?sync|sync|reload|rescan)\b",
                                      r"\b(?:datasets|tables)\b(?!\s*#?\s*\d)"),
        required=("object",), optional=("env_id",)),
    IntentSpec("get_dataset_usage", "dataset", (
        r"\bwho uses\b|\bwhat uses\b|\busage\b", r"\bused\b", r"\b(?:uses?|using) (?:it|this"
        r"|that|the)\b", r"\bdepend", r"\brel(?:y|ies|ying) on\b", r"\bbreak\b",
        r"\bbuilt (?:on|from)\b|\bbased on\b", r"\bdownstream\b|\bimpact\b"), cues=(
        _CHART, _DASH, _DATA, REFERENCE), required=("object",), optional=("env_id",)),
    IntentSpec("preview_dataset", "dataset", (
        r"\brows?\b|\brecords?\b", r"\bpreview\b|\bsample\b|\bpeek\b|\bexamples?\b",
        r"\b(?:first|top) \d+\b", r"(?:the )?data look", r"\bsome data\b|\bthe data\b"),
        cues=(_DATA, REFERENCE), avoid=(r"\bhow many (?:rows|records)\b.*\bcache",),
        required=("object",), optional=("env_id", "limit")),
    IntentSpec("refresh_dataset_columns", "dataset", (
        r"\b(?:refresh|re-?sync|sync|reload|rescan|re-?read)\b",
        r"\bpick (?:them|those|it|the new \w+) up\b|\bnew columns\b"), cues=(
        r"\bcolumns?\b|\bschema\b|\bmetadata\b|\bfields?\b", _DATA, REFERENCE),
        required=("object",), optional=("env_id",)),
    IntentSpec("update_dataset", "dataset", (
        r"\bcach", _CHANGE_VERB + r".{0,20}\bdescription\b",
        _CHANGE_VERB + r".{0,20}\bowners?\b"), cues=(_DATA, REFERENCE),
        required=("object", "changes"), optional=("env_id",)),
    IntentSpec("delete_dataset", "dataset", (_DELETE,), cues=(_DATA, REFERENCE),
               required=("object",), optional=("env_id",)),
    IntentSpec("compare_environments", "dashboard", (
        r"\bcompar", r"\bdiff", r"\bvs\.?\b|\bversus\b", r"\bin sync\b|\bout of sync\b|\bdrift",
        r"\b(?:the )?same (?:in|between|across|on)\b|\bidentical\b|\bmatch(?:es)?\b",
        r"what(?:'s| is) changed between|\bdiffer"), cues=(
        r"\bbetween\b|\bacross\b|\band\b", _DASH), avoid=(r"\bwould\b|\bdry[- ]?run\b",),
        required=("object", "envs")),
    IntentSpec("plan_migration", "dashboard", (
        r"what (?:would|will|could) (?:happen|change|it do|be (?:created|overwritten|changed))",
        r"\bdry[- ]?run\b", r"\bplan\b", r"\bsimulat", r"\bbefore i (?:promote|migrate|deploy"
        r"|push|move|ship)", r"\bwould be (?:created|overwritten|changed)\b",
        r"\bif (?:i|we) (?:promote|migrate|deploy|push|move|ship)"), cues=(
        r"\bpromot|\bmigrat|\bdeploy|\bpush|\bmove|\bship|\bwent\b", _DASH),
        required=("object", "envs")),
    IntentSpec("migrate_dashboard", "dashboard", (
        r"\bpromot", r"\bmigrat", r"\bdeploy", r"\b(?:push|ship|release|copy|move|get|put|send"
        r"|take)\b.{0,40}\b(?:to|into|onto)\b"), cues=(_DASH, REFERENCE),
        avoid=(r"\blately\b|\brecent(?:ly)?\b|\bhistory\b|\bpast\b|\bprevious\b|\bwould\b",),
        required=("object", "envs")),
    IntentSpec("migration_history", None, (
        r"\bmigrated\b|\bpromoted\b|\bdeployed\b", r"migrations?\b.{0,20}\b(?:history|log)"
        r"|history of (?:migrations|promotions)",
        r"\b(?:did|have|has) (?:we|you|i|they|anyone|people) (?:promote|migrate|deploy|push)",
        r"\b(?:recent|past|previous|last|latest) (?:\d+ )?(?:migrations|promotions|deploy"
        r"ments)", r"\b(?:migrations|promotions|deployments)\b.{0,20}\b(?:lately|recently)\b"),
        cues=(r"\blately\b|\brecently\b|\bhistory\b", r"\bpromot|\bmigrat|\bdeploy"),
        avoid=(r"\bwould\b|\bif i\b",), optional=("dashboard_filter", "limit")),
    IntentSpec("recent_changes", "dashboard", (
        r"what(?:'s| has| have)? (?:been )?changed", r"\bchange ?(?:history|log)\b|\bchangelog\b",
        r"\b(?:recent|latest|last) (?:changes|edits)\b", r"\bwho (?:changed|edited|modified"
        r"|touched)\b", r"\btouched\b", r"what(?:'s| has) been done", r"what happened (?:to|with)",
        r"\baudit\b", r"\bhistory of (?:this|it|the|dashboard)\b|\bits history\b"), cues=(
        r"\blately\b|\brecently\b|\bhistory\b", _DASH, REFERENCE),
        avoid=(r"\bbetween\b|\bcompar|\bvs\b",), required=("object",),
        optional=("env_id", "limit")),
    IntentSpec("list_charts", "chart", (_CHART,), cues=(LISTING_VERBS,), avoid=(
        r"\b(?:on|in) (?:it|this|that|here|the dashboard)\b|\bthis dashboard\b|\bits\b"
        r"|\b(?:uses?|using|built on|based on|rely|depend)\b",),
        optional=("env_id", "search", "page_size")),
    IntentSpec("next_page", None, (
        r"\bnext (?:page|ones?|\d+)\b", r"\bshow more\b|\bmore results\b|^\s*(?:and )?more\b",
        r"\bthe rest\b", r"\bpage \d{1,4}\b", r"\bkeep going\b|^\s*continue\b")),
    IntentSpec("refuse:create_dashboard", "dashboard", (_CREATE,), cues=(_DASH,)),
    IntentSpec("refuse:create_dataset", "dataset", (_CREATE,), cues=(_DATA,)),
    IntentSpec("refuse:create_chart", "chart", (_CREATE,), cues=(_CHART,)),
    IntentSpec("refuse:delete_chart", "chart", (_DELETE,), cues=(_CHART,)),
    IntentSpec("refuse:update_chart", "chart", (
        r"\b(?:re-?name|re-?title|edit|change|modify|update)\b",), cues=(_CHART,)),
    IntentSpec("refuse:run_query", None, (
        r"\b(?:run|execute) (?:a |this |the |my )?(?:sql|query)\b|\bsql ?lab\b",)),
    IntentSpec("refuse:schedule_report", None, (
        r"\b(?:schedule|email|send|mail)\b.{0,30}\b(?:report|alert|dashboard|screenshot)s?\b"
        r"|\balerts?\b",)),
)

# Messages that are only social: an opener or a closer gets a short reply and no tool.
CHAT = {
    "greet": (r"^\s*(?:hi|hello|hey|hiya|howdy|yo|greetings|good (?:morning|afternoon|evening"
              r"|day)|morning|evening)(?:\s+(?:there|all|team|folks|agent|bot))?"
              r"[\s!.,:;)(\-pD]*$"),
    "thanks": (r"^\s*(?:(?:ok(?:ay)?|great|perfect|cool|nice|awesome|brilliant|lovely|good|"
               r"cheers|thanks?(?: you)?(?: (?:so|very) much)?(?: for (?:the|your) help)?"
               r"|thx|ty|that'?s (?:all|it|everything)(?: for (?:now|today))?|all good|done"
               r"|bye|goodbye|see you|later|that will do|that'?ll do|no more questions"
               r"|nothing else)[\s!.,:;)(\-pD]*)+$"),
}

CREATE = _CREATE  # a request to create an object: no tool does that, whatever else it says
